// Command temporal-dev runs a single-process Temporal development server,
// a small stand-in for `temporal server start-dev`.
//
// It exists because the Go module proxy we can reach refuses
// go.temporal.io/cli (403), so `go install go.temporal.io/cli/cmd/temporal`
// fails here, while go.temporal.io/server is served. This program builds the
// server in-process from go.temporal.io/server with SQLite persistence
// (in-memory by default), pre-registers the requested namespaces and serves
// the frontend gRPC API on a fixed address. There is no web UI.
//
// It lives in its own Go module so that the main module never depends on the
// Temporal server. Run it with:
//
//	cd scripts/temporal-dev && go run . --port 7233
//
// Flags: --ip (default 127.0.0.1), --port (frontend gRPC, default 7233),
// --namespace (repeatable, default "default"), --db-filename (SQLite file;
// in-memory when empty), --log-level (debug, info, warn, error; default warn),
// --http-port (frontend HTTP API, used by Nexus; default a free port, -1
// disables it).
//
// Once the frontend answers gRPC health checks it prints one line to stdout:
//
//	temporal dev server ready on 127.0.0.1:7233
//
// Server logs go to stderr. SIGINT or SIGTERM stops the server cleanly.
//
// Scripts should build a binary and signal it directly
// (go build -o /tmp/temporal-dev . && /tmp/temporal-dev --port 7233):
// `go run` does not pass SIGTERM on to the program it runs. The first build
// compiles the whole Temporal server and SQLite in Go; on a 2-core machine
// it takes 7 to 14 minutes and fills about 3.5 GB of module and build cache.
// Later builds take seconds.
//
// go.temporal.io/server is pinned at v1.32.1 because v1.32.2 requires Go
// 1.26.10 and the machines have Go 1.26.8 (GOTOOLCHAIN=local).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

const clusterName = "active"

// options are the command-line flags.
type options struct {
	ip         string
	port       int
	httpPort   int
	namespaces []string
	dbFile     string
	logLevel   string
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	var o options
	var ns stringList
	flag.StringVar(&o.ip, "ip", "127.0.0.1", "IP address the frontend binds to")
	flag.IntVar(&o.port, "port", 7233, "frontend gRPC port")
	flag.IntVar(&o.httpPort, "http-port", 0, "frontend HTTP API port (0: a free port, -1: disabled)")
	flag.Var(&ns, "namespace", "namespace to register at start (repeatable; default \"default\")")
	flag.StringVar(&o.dbFile, "db-filename", "", "SQLite file to persist state in (default: in-memory)")
	flag.StringVar(&o.logLevel, "log-level", "warn", "server log level: debug, info, warn or error")
	flag.Parse()
	o.namespaces = ns
	if len(o.namespaces) == 0 {
		o.namespaces = []string{"default"}
	}

	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "temporal-dev:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	switch o.logLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("unknown --log-level %q (want debug, info, warn or error)", o.logLevel)
	}
	if net.ParseIP(o.ip) == nil {
		return fmt.Errorf("--ip %q is not an IP address", o.ip)
	}
	frontend := net.JoinHostPort(o.ip, strconv.Itoa(o.port))
	// The address the server's own components use to reach the frontend.
	dialIP := o.ip
	if net.ParseIP(o.ip).IsUnspecified() {
		dialIP = "127.0.0.1"
	}
	dialAddr := net.JoinHostPort(dialIP, strconv.Itoa(o.port))

	// Fail early, with a clear message, if the frontend port is taken.
	l, err := net.Listen("tcp", frontend)
	if err != nil {
		return fmt.Errorf("frontend address not available: %w", err)
	}
	_ = l.Close()

	cfg, err := serverConfig(o, dialAddr)
	if err != nil {
		return err
	}
	if err := prepareDB(o, cfg.Persistence.DataStores[sqliteplugin.PluginName].SQL); err != nil {
		return err
	}

	logger := log.NewZapLogger(log.BuildZapLogger(log.Config{Level: o.logLevel}))
	authorizer, err := authorization.GetAuthorizerFromConfig(&cfg.Global.Authorization)
	if err != nil {
		return err
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&cfg.Global.Authorization, logger)
	if err != nil {
		return err
	}

	// Every service runs in this process, so membership is static: no
	// ringpop, no membership ports.
	hosts := map[primitives.ServiceName]static.Hosts{}
	for name, svc := range cfg.Services {
		ip := "127.0.0.1"
		if name == string(primitives.FrontendService) {
			ip = dialIP
		}
		hosts[primitives.ServiceName(name)] = static.SingleLocalHost(net.JoinHostPort(ip, strconv.Itoa(svc.RPC.GRPCPort)))
	}

	srv, err := temporal.NewServer(
		temporal.WithConfig(cfg),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(hosts),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(dynamicconfig.StaticClient{
			// Let tests see newly added search attributes at once.
			dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key():      true,
			dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
		}),
	)
	if err != nil {
		return fmt.Errorf("creating server: %w", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if err := srv.Start(); err != nil {
		return fmt.Errorf("starting server: %w", err)
	}
	readyCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	err = waitServing(readyCtx, dialAddr)
	cancel()
	if err == nil {
		fmt.Printf("temporal dev server ready on %s\n", frontend)
		<-ctx.Done()
	}
	stop() // a second signal now kills the process at once
	if stopErr := srv.Stop(); stopErr != nil && err == nil {
		err = fmt.Errorf("stopping server: %w", stopErr)
	}
	if errors.Is(err, context.Canceled) {
		return nil // interrupted while starting
	}
	return err
}

// serverConfig builds the static configuration of a one-shard, one-process
// cluster backed by SQLite.
func serverConfig(o options, dialAddr string) (*config.Config, error) {
	sql := &config.SQL{PluginName: sqliteplugin.PluginName}
	if o.dbFile == "" {
		sql.DatabaseName = "temporal-dev"
		sql.ConnectAttributes = map[string]string{"mode": "memory", "cache": "shared"}
	} else {
		sql.DatabaseName = o.dbFile
		sql.ConnectAttributes = map[string]string{"mode": "rwc"}
	}

	var cfg config.Config
	cfg.Global.Membership.MaxJoinDuration = 30 * time.Second
	cfg.Global.Membership.BroadcastAddress = "127.0.0.1"
	cfg.Persistence = config.Persistence{
		DefaultStore:     sqliteplugin.PluginName,
		VisibilityStore:  sqliteplugin.PluginName,
		NumHistoryShards: 1,
		DataStores:       map[string]config.DataStore{sqliteplugin.PluginName: {SQL: sql}},
	}
	switch o.httpPort {
	case -1:
		o.httpPort = 0 // the server's "disabled"
	case 0:
		port, err := freePort(o.ip)
		if err != nil {
			return nil, err
		}
		o.httpPort = port
	}
	info := cluster.ClusterInformation{
		Enabled:                true,
		InitialFailoverVersion: 1,
		RPCAddress:             dialAddr,
	}
	if o.httpPort != 0 {
		info.HTTPAddress = net.JoinHostPort(o.ip, strconv.Itoa(o.httpPort))
	}
	cfg.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation:       map[string]cluster.ClusterInformation{clusterName: info},
	}
	cfg.DCRedirectionPolicy.Policy = "noop"
	cfg.Archival.History.State = "disabled"
	cfg.Archival.Visibility.State = "disabled"
	cfg.NamespaceDefaults.Archival.History.State = "disabled"
	cfg.NamespaceDefaults.Archival.Visibility.State = "disabled"
	cfg.PublicClient.HostPort = dialAddr

	// The frontend gets the requested address; history, matching and the
	// internal worker get free loopback ports.
	cfg.Services = map[string]config.Service{
		"frontend": {RPC: config.RPC{GRPCPort: o.port, HTTPPort: o.httpPort, BindOnIP: o.ip}},
	}
	for _, name := range []string{"history", "matching", "worker"} {
		port, err := freePort("127.0.0.1")
		if err != nil {
			return nil, err
		}
		cfg.Services[name] = config.Service{RPC: config.RPC{GRPCPort: port, BindOnLocalHost: true}}
	}
	return &cfg, nil
}

// prepareDB creates the schema of a new database file and registers the
// namespaces (registering an existing namespace is a no-op). An in-memory
// database gets its schema from the SQLite plugin when first opened.
func prepareDB(o options, sql *config.SQL) error {
	if o.dbFile != "" {
		if _, err := os.Stat(o.dbFile); errors.Is(err, os.ErrNotExist) {
			if _, err := os.Stat(filepath.Dir(o.dbFile)); err != nil {
				return fmt.Errorf("--db-filename: %w", err)
			}
			if err := sqliteschema.SetupSchema(sql); err != nil {
				return fmt.Errorf("creating schema in %s: %w", o.dbFile, err)
			}
		}
	}
	var nss []*sqliteschema.NamespaceConfig
	for _, name := range o.namespaces {
		ns, err := sqliteschema.NewNamespaceConfig(clusterName, name, false, nil)
		if err != nil {
			return err
		}
		nss = append(nss, ns)
	}
	if err := sqliteschema.CreateNamespaces(sql, nss...); err != nil {
		return fmt.Errorf("registering namespaces: %w", err)
	}
	return nil
}

// freePort returns a TCP port that is free on ip now.
func freePort(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitServing polls the frontend's gRPC health service until the workflow
// service reports SERVING.
func waitServing(ctx context.Context, addr string) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	health := healthpb.NewHealthClient(conn)
	req := &healthpb.HealthCheckRequest{Service: "temporal.api.workflowservice.v1.WorkflowService"}
	for {
		resp, err := health.Check(ctx, req)
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("status %s", resp.GetStatus())
			}
			return fmt.Errorf("frontend on %s not serving: %w (%w)", addr, err, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
