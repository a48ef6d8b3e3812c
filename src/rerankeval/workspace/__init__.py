"""The project's artefacts on disk, for the stages and for everything else that reads them: where they live
(``paths``: dvc.yaml's ``vars``, every file name derived from them) and the rerank stage's runs read back (``runs``).
"""
