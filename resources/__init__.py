"""Package data: plans, prompt sets, icons and desktop metadata."""
