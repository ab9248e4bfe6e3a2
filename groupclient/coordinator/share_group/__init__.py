"""Share groups (KIP-932) on the coordinator's side: the share-partitions whose records a share
group's members take turns on (:mod:`.partition`).  Apart from the classic and the consumer
groups: neither imports it, nor it them."""
