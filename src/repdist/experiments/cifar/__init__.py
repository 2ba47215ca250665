"""The CIFAR-10 study: ResNets trained by seed, and their embeddings compared."""
