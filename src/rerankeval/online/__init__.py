"""The step after the offline bake-off: how an online experiment would see the challenger, before launch.

``clicks`` simulates users on a result page (position-based, cascade and dependent-click models whose click and stop
probabilities come from the qrels grades); ``interleaving`` merges two rankings into the page one user sees (team-draft
and balanced interleaving) and credits a user's clicks to one side; ``sensitivity`` answers, per challenger, how many
impressions interleaving needs to detect the offline difference, against an A/B test on a click measure and against
the paired offline comparison on judged queries, at a stated power, and checks the rule's false detection rate on
seeded null pairs.

A RAG generator that merges one context set cannot be interleaved the way a result page can: interleave a generator's
context candidates only where the product shows its sources (docs/online.md).
"""
