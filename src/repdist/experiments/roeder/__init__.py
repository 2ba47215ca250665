"""Roeder et al. (2021)'s studies: the classifier, the CPC model and the word model."""
