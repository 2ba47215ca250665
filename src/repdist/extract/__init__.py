"""f and g straight from a PyTorch classifier of the family p(y|x) = softmax(f(x)^T g(y)), for
`repdist compare`: `classifier_representations` reads the final linear layer's inputs as f and
its weight rows as g; `causal_lm_representations` does the same for a causal language model, and
`load_causal_lm`, `load_tokenizer` and `text_contexts` bring a Hugging Face model and text to it."""

from .causal_lm import causal_lm_representations
from .classifier import (ClassifierRepresentations, ExtractionError, classifier_representations,
                         write_representations)
from .hf import load_causal_lm, load_tokenizer, text_contexts

__all__ = ["ClassifierRepresentations", "ExtractionError", "causal_lm_representations",
           "classifier_representations", "load_causal_lm", "load_tokenizer", "text_contexts",
           "write_representations"]
