"""Options read from a config that may lack them and checked as a whole, and the adaptive softmax's options."""
