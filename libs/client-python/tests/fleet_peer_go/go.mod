module github.com/sluice-dev/sluice/libs/client-python/tests/fleet_peer_go

go 1.19

require github.com/sluice-dev/sluice/libs/client-go v0.0.0

replace github.com/sluice-dev/sluice/libs/client-go => ../../../client-go
