// Command example connects to placed on its Unix socket, checks health, lists the
// containers and streams Watch, resuming after the last sequence received when the stream
// drops. Generate the placedv1 package first (see ../buf.gen.yaml).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	placedv1 "example.invalid/placed/clients/go/placedv1"
)

func main() {
	socket := flag.String("socket", "/run/placed/placed.sock", "the daemon's Unix socket")
	flag.Parse()

	// grpc-go's unix resolver sends ":authority: localhost": nothing else to set.
	conn, err := grpc.NewClient("unix://"+*socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatalf("connect: %v", err)
	}
	defer conn.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	health, err := healthpb.NewHealthClient(conn).Check(ctx,
		&healthpb.HealthCheckRequest{Service: "placed.v1.PlacedService"})
	cancel()
	if err != nil {
		log.Fatalf("health: %v", err)
	}
	fmt.Println("health:", health.GetStatus())

	client := placedv1.NewPlacedServiceClient(conn)
	var resume uint64
	token := ""
	for first := true; ; first = false {
		page, err := client.ListContainers(context.Background(),
			&placedv1.ListContainersRequest{PageSize: 100, PageToken: token})
		if err != nil {
			log.Fatalf("list: %v", err)
		}
		if first {
			// Watching from the first page's sequence misses no change made after it.
			resume = page.GetEventSequence()
		}
		for _, c := range page.GetContainers() {
			fmt.Printf("%-20s %-28s %s\n", c.GetName(), c.GetState(), c.GetPlacementId())
		}
		token = page.GetNextPageToken()
		if token == "" {
			break
		}
	}

	for {
		stream, err := client.Watch(context.Background(),
			&placedv1.WatchRequest{ResumeAfterSequence: resume})
		if err != nil {
			log.Fatalf("watch: %v", err)
		}
		for {
			e, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				code := status.Code(err)
				if code == codes.Aborted || code == codes.Unavailable {
					log.Printf("watch interrupted (%v); resuming after %d", err, resume)
					time.Sleep(time.Second)
					break
				}
				// OUT_OF_RANGE: events were lost; list again before watching.
				log.Fatalf("watch: %v", err)
			}
			resume = e.GetSequence()
			fmt.Println(e.GetSequence(), e.GetContainer(), e.GetKind(), e.GetMessage())
		}
	}
}
