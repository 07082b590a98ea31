"""Claims a memory makes about the world, and the probes that check them."""
