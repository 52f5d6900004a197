"""A toy training package laid out like miles: batching feeds rollout; scoring stands apart."""
