"""The analysis: name resolution, the provenance walk, function and module summaries."""
