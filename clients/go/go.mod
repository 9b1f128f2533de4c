module example.invalid/placed/clients/go

go 1.22

require (
	google.golang.org/grpc v1.66.0
	google.golang.org/protobuf v1.34.2
)
