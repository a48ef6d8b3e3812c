"""DVC stage `train`: fine-tune a cross-encoder on the train split's queries (params `train`)."""

import argparse

from rerankeval.pipeline import train
from rerankeval.pipeline.entry import run_stage

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--params", default="params.yaml")
parser.add_argument("--snapshot", required=True)
parser.add_argument("--candidates", required=True)
args = parser.parse_args()
run_stage("train", lambda: train.run(args.params, args.snapshot, args.candidates))
