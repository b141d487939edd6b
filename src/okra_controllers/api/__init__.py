"""okra API types, one package per version.

- `v1alpha1`: the kinds as pydantic models, whose field names are the API; the CRDs are
  generated from them (`make manifests`), descriptions from their docstrings;
- `kinds`: every kind okra reads or writes, by one name each;
- `validation`: an object read into its model, its problems named by field, and
  `load_or_report`, which reads one from an informer's store or reports its invalid spec.
"""
