"""Built-in data: the Gaussian-margin problem with a known density (and more)."""
