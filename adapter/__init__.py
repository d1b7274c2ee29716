"""The bounded browser adapter: observation, actions, the model loop and the scripted endpoint."""
