"""JSON schemas of the request bodies, one module per resource, as the reference declares them."""
