"""Serving models over HTTP (Ray Serve), load tests against endpoints, and the dedicated latency measurement."""
