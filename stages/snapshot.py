"""DVC stage `snapshot`: the dataset (params `dataset`) to hashed Parquet tables and a manifest."""

from rerankeval.collection import load_beir
from rerankeval.layout import SNAPSHOT_DIR, load_params
from rerankeval.snapshot import write_snapshot


def main() -> None:
    dataset = load_params()["dataset"]
    collection = load_beir(dataset["path"], dataset.get("splits"))
    manifest = write_snapshot(collection, SNAPSHOT_DIR, source={"name": dataset["name"], "path": dataset["path"],
                                                                "splits": dataset.get("splits")})
    counts = {name: entry["rows"] for name, entry in manifest["tables"].items()}
    print(f"snapshot: {counts}, splits {manifest['splits']}, slices {manifest['slice_columns']}")
    for note in collection.notes:
        print(f"snapshot: note: {note}")


if __name__ == "__main__":
    main()
