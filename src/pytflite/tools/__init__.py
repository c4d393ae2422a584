"""Command-line tools and generators."""
