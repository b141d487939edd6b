"""The Cell controller: versions, canary steps, rollback."""
