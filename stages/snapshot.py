"""DVC stage `snapshot`: the dataset (params `dataset`) to hashed Parquet tables and a manifest."""

import argparse

from rerankeval.pipeline import snapshot
from rerankeval.pipeline.entry import run_stage

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--params", default="params.yaml")
parser.add_argument("--out", required=True, help="snapshot folder")
args = parser.parse_args()
run_stage("snapshot", lambda: snapshot.run(args.params, args.out))
