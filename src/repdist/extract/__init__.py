"""f and g straight from a PyTorch classifier: `classifier_representations(model, loader)`
reads the inputs of the final linear layer as f and its weight rows as g, so that
`repdist compare` (and `repdist.measures.compare`) can take any classifier of the family
p(y|x) = softmax(f(x)^T g(y))."""

from .classifier import (
    ClassifierRepresentations,
    ExtractionError,
    classifier_representations,
    write_representations,
)

__all__ = [
    "ClassifierRepresentations",
    "ExtractionError",
    "classifier_representations",
    "write_representations",
]
