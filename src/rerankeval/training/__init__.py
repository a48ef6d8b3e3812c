"""Fine-tuning rerankers on the train split (``cross_encoder``: the offline cross-encoder of the demo)."""
