"""The distillation study: students trained to match a teacher, and their table."""
