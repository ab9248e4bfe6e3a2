"""What both kinds of group the coordinator serves need, classic (:mod:`..classic_group`) and
consumer-protocol (:mod:`..consumer_group`): the timer queue they share, the classic APIs' requests
and answers (a consumer group's classic members answer JoinGroup and SyncGroup too), why a group
rebalanced, and a group's own configs (IncrementalAlterConfigs).  Below both, so that neither kind
of group imports the other."""
