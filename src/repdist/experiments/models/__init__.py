"""Anyone's models compared by group, as `repdist compare` and the models branch do."""
