"""Finding and loading apace's models: explicit path → env var → config file → embedded."""
