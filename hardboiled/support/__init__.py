"""What every stage shares: diagnostics and exit codes, atomic file output,
and the content-addressed result cache."""
