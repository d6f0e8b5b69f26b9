module github.com/sluice-dev/sluice/libs/client-go

go 1.19
