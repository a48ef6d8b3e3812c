"""Collections in, snapshot tables out: the BEIR reader, TREC run and qrels files, and the hashed snapshot."""
