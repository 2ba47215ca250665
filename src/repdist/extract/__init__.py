"""f and g straight from a PyTorch classifier: `classifier_representations(model, loader)`
reads the inputs of the final linear layer as f and its weight rows as g, so that
`repdist compare` (and `repdist.measures.compare`) can take any classifier of the family
p(y|x) = softmax(f(x)^T g(y)). `causal_lm_representations(model, tokens)` does the same for a
causal language model (f: the last hidden state at a position, g: the unembedding rows);
`load_causal_lm`, `load_tokenizer` and `text_contexts` bring a Hugging Face model and text to it
(transformers optional)."""

from .causal_lm import causal_lm_representations
from .classifier import (
    ClassifierRepresentations,
    ExtractionError,
    classifier_representations,
    write_representations,
)
from .hf import load_causal_lm, load_tokenizer, text_contexts

__all__ = [
    "ClassifierRepresentations",
    "ExtractionError",
    "causal_lm_representations",
    "classifier_representations",
    "load_causal_lm",
    "load_tokenizer",
    "text_contexts",
    "write_representations",
]
