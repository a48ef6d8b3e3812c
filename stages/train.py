"""DVC stage `train`: fine-tune a cross-encoder on the train split's queries (see rerankeval.training)."""

from rerankeval.layout import CANDIDATES, SNAPSHOT_DIR, load_params
from rerankeval.training import run_stage


def main() -> None:
    run_stage(load_params()["train"], snapshot_dir=SNAPSHOT_DIR, candidates_path=CANDIDATES)


if __name__ == "__main__":
    main()
