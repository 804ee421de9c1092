"""Reproductions of Werpachowski, Gyorgy, Szepesvari (NeurIPS 2019)."""
