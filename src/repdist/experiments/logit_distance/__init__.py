"""The follow-up's logit-distance study: teachers, students and their tables."""
