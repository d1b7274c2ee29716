"""The operator server: a FastAPI app over the service layer, its run index and its pages."""
