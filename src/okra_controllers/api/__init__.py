"""okra API types, one package per version."""
