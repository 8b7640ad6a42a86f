package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/device/agent"
	"github.com/chorus-edge/chorus/device/enrol"
	"github.com/chorus-edge/chorus/device/process"
	"github.com/chorus-edge/chorus/device/skilluser"
)

// agentFlags are the flags of `chorus agent`; `chorus up` shares some.
type agentFlags struct {
	config      string
	dataDir     string
	device      string
	mqttURL     string
	username    string
	password    string
	credentials string
	server      string
	skills      []string
	userSkills  []string
	wsListen    string
	isolation   string
	uidRange    string
	memoryLimit string
}

// registerIsolation adds the skill isolation flags that `chorus agent` and
// `chorus up` share; they override the config file's skills section.
func (f *agentFlags) registerIsolation(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.isolation, "skill-isolation", "", "how skills are kept from the agent: auto, uid or none (default: the config's skills.isolation, auto)")
	cmd.Flags().StringVar(&f.uidRange, "skill-uid-range", "", "the uids skills run under, FIRST-LAST (default: the config's skills.uid_range, "+skilluser.DefaultRange+")")
}

func (a *app) newAgentCmd() *cobra.Command {
	var f agentFlags
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the device agent: the OVOS skill lifecycle on this satellite",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.agentStart(cmd, &f)
			if err != nil {
				return err
			}
			creds, err := f.resolveCredentials()
			if err != nil {
				return err
			}
			ac, err := a.agentConfig(cfg, creds, f)
			if err != nil {
				return err
			}
			return a.runAgent(cmd.Context(), ac)
		},
	}
	f.registerRun(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.device, "device", "", "device id (default: from the credentials)")
	fl.StringVar(&f.mqttURL, "mqtt-url", "", "broker URL, e.g. mqtt://gateway:1883")
	fl.StringVar(&f.username, "username", "", "MQTT username (the device id)")
	fl.StringVar(&f.password, "password", "", "MQTT password (the device secret)")
	fl.StringVar(&f.credentials, "credentials", "", "agent credentials file (JSON), as written by the gateway")
	fl.StringVar(&f.server, "server", "", "the gateway's HTTP URL")
	cmd.AddCommand(a.newAgentJoinCmd())
	return cmd
}

// registerRun adds the flags of running an agent that `chorus agent` and
// `chorus agent join` share.
// agentStart is what `agent` and `agent join` do first: SIGHUP ignored,
// the config loaded (its warnings logged), the memory limit applied.
func (a *app) agentStart(cmd *cobra.Command, f *agentFlags) (configs.Config, error) {
	a.ignoreHangup(cmd.Context())
	cfg, warnings, err := configs.Load(f.config)
	if err != nil {
		return cfg, err
	}
	for _, w := range warnings {
		a.log.Warn("config: " + w)
	}
	if cmd.Flags().Changed("memory-limit") {
		cfg.MemoryLimit = f.memoryLimit
	}
	return cfg, applyMemoryLimit(cfg.MemoryLimit, a.log)
}

func (f *agentFlags) registerRun(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "", "JSON config file (missing file = defaults)")
	fl.StringVar(&f.memoryLimit, "memory-limit", "", "Go soft memory limit, e.g. 24MiB or off (default: the config's memory_limit; GOMEMLIMIT wins)")
	fl.StringVar(&f.dataDir, "data-dir", configs.DefaultDataDir, "directory for state (installed skills, settings, session)")
	fl.StringSliceVar(&f.skills, "skills", nil, "bundled skill root (repeatable)")
	fl.StringSliceVar(&f.userSkills, "user-skills", nil, "user skill root (repeatable)")
	fl.StringVar(&f.wsListen, "ws-listen", "", "OVOS websocket drop-in host:port, or off (default: the config's websocket section, 127.0.0.1:8181)")
	f.registerIsolation(cmd)
}

func (a *app) newAgentJoinCmd() *cobra.Command {
	var f agentFlags
	cmd := &cobra.Command{
		Use:   "join TOKEN",
		Short: "Enrol this satellite with a join token, then run the agent",
		Long: "Enrol this satellite with a token from `chorus fleet token create` and run the agent.\n\n" +
			"The token carries the gateway's URL; with TLS its certificate pin is checked before anything is sent.\n" +
			"The credentials are written to <data-dir>/enrolment/credentials.json (0600, in a 0700 dir). If the token\n" +
			"needs an operator's accept, the agent waits, polling with backoff up to 15 s, until someone runs\n" +
			"`chorus fleet device accept <pending-id>` (or rejects it: then it exits with an error). Once enrolled,\n" +
			"running the same command again uses the credentials file and ignores the token.",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &exitError{code: 2, err: fmt.Errorf("want one join token (as printed by `chorus fleet token create` on the gateway), got %d arguments", len(args))} // a usage error
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.agentStart(cmd, &f)
			if err != nil {
				return err
			}
			creds, err := enrol.Run(cmd.Context(), enrol.Config{Token: args[0], DataDir: f.dataDir, Device: f.device, Logger: a.log.With("component", "join")})
			if err != nil {
				if cmd.Context().Err() != nil {
					return nil // stopped while waiting: a clean shutdown
				}
				return err
			}
			// Skills could read the token from this process's command line
			// (/proc/<pid>/cmdline): run the agent as `chorus agent
			// --credentials FILE`, the same process without the token.
			if err := execWithoutToken(args[0], enrol.CredentialsPath(f.dataDir)); err != nil {
				a.log.Warn("could not drop the join token from the command line; running on", "error", err)
			}
			ac, err := a.agentConfig(cfg, creds, f)
			if err != nil {
				return err
			}
			return a.runAgent(cmd.Context(), ac)
		},
	}
	f.registerRun(cmd)
	cmd.Flags().StringVar(&f.device, "device", "", "device id to ask for (default: this host's name)")
	return cmd
}

// resolveCredentials takes the credentials file, else up.json's local agent,
// then lays the flags over them.
func (f agentFlags) resolveCredentials() (configs.AgentCredentials, error) {
	var c configs.AgentCredentials
	switch {
	case f.credentials != "":
		var err error
		if c, err = configs.ReadAgentCredentials(f.credentials); err != nil {
			return c, err
		}
	case f.mqttURL == "" || f.password == "":
		up, err := configs.ReadUp(configs.UpPath(f.dataDir))
		if err != nil {
			return c, fmt.Errorf("agent credentials: pass --credentials FILE or --mqtt-url, --username, --password: %w", err)
		}
		if up.Agent == nil {
			return c, errors.New("agent credentials: up.json holds no local agent (start `chorus up`, or pass --credentials)")
		}
		c = *up.Agent
	}
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&c.Device, f.device)
	set(&c.MQTTURL, f.mqttURL)
	set(&c.Username, f.username)
	set(&c.Password, f.password)
	set(&c.ServerURL, f.server)
	if c.Username == "" {
		c.Username = c.Device
	}
	if c.Device == "" || c.MQTTURL == "" || c.Password == "" {
		return c, errors.New("agent credentials: device, mqtt url and password are required")
	}
	return c, nil
}

// agentConfig maps the config file, credentials and flags onto agent.Config.
func (a *app) agentConfig(cfg configs.Config, c configs.AgentCredentials, f agentFlags) (agent.Config, error) {
	key, err := c.PrivateKey()
	if err != nil {
		return agent.Config{}, fmt.Errorf("agent credentials: %w", err)
	}
	ws, err := wsListen(cfg.Websocket, f.wsListen)
	if err != nil {
		return agent.Config{}, err
	}
	skills, err := f.skillsSection(cfg.Skills)
	if err != nil {
		return agent.Config{}, err
	}
	servicesConfig := cfg.Websocket.ServicesConfig
	if servicesConfig == "" {
		// OVOS reads $XDG_CONFIG_DIRS/mycroft/mycroft.conf over its system config.
		servicesConfig = filepath.Join(f.dataDir, "ovos", "mycroft", "mycroft.conf")
	}
	ver, _ := buildInfo()
	bin, _ := os.Executable()
	return agent.Config{
		Device: c.Device, MQTTURL: c.MQTTURL, Username: c.Username, Password: c.Password,
		Key: key, KeyVersion: c.KeyVersion, ServerURL: c.ServerURL,
		DataDir: filepath.Join(f.dataDir, "agents", c.Device), DataRoot: f.dataDir,
		Bundled: f.skills, UserSkills: f.userSkills,
		WSListen: ws, WSRoute: cfg.Websocket.Route, WSMaxSize: cfg.Websocket.MaxMsgSize * 1000 * 1000,
		WSMaxPacket: int(cfg.Broker.MaxPacketSize), WSServicesUsers: cfg.Websocket.ServicesUsers,
		WSServicesConfig: servicesConfig, Trampoline: []string{bin, process.TrampolineCommand},
		Skills: skills, Connectivity: cfg.Connectivity, ReadySettings: cfg.ReadySettings,
		KeepAlive: cfg.Agent.KeepAlive.Duration(), WillDelay: cfg.Agent.WillDelay.Duration(),
		Version: ver, Bin: bin, Logger: a.log.With("role", "agent"),
	}, nil
}

// skillsSection lays the isolation flags over the config's skills section,
// checked as the config file's values are.
func (f agentFlags) skillsSection(s configs.Skills) (configs.Skills, error) {
	if f.isolation != "" {
		s.Isolation = f.isolation
	}
	if f.uidRange != "" {
		s.UIDRange = f.uidRange
	}
	c := configs.Default()
	c.Skills = s
	if err := c.Validate(); err != nil {
		return s, fmt.Errorf("--skill-isolation, --skill-uid-range: %w", err)
	}
	return s, nil
}

// wsListen decides the drop-in's address: the flag (host:port or off),
// else the config's websocket section.
func wsListen(w configs.Websocket, flag string) (string, error) {
	switch {
	case flag == "off":
		return "", nil
	case flag != "":
		if !strings.Contains(flag, ":") {
			return "", fmt.Errorf("--ws-listen %q: want host:port or off", flag)
		}
		return flag, nil
	case w.Disabled:
		return "", nil
	default:
		return fmt.Sprintf("%s:%d", w.Host, w.Port), nil
	}
}

// runAgent runs an agent until ctx is cancelled, then shuts it down.
func (a *app) runAgent(ctx context.Context, ac agent.Config) error {
	ag, err := agent.Start(ctx, ac)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting: a clean shutdown
		}
		return err
	}
	a.log.Info("agent running", "device", ac.Device, "websocket", ag.WSAddr())
	// Start's burst (discovery, loading every skill) is over: give its
	// garbage back to the OS now rather than at the scavenger's pace, so an
	// idle satellite's resident size is what it keeps (docs/benchmarks.md).
	debug.FreeOSMemory()
	<-ctx.Done()
	return closeAgent(ag)
}

func closeAgent(ag *agent.Agent) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return ag.Close(ctx)
}

// execWithoutToken replaces this process with the same command line minus
// `join` and the token, plus --credentials creds: the enrolled agent runs
// with nothing in /proc/<pid>/cmdline that enrols another device. It
// returns only on failure.
func execWithoutToken(token, creds string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	args := make([]string, 0, len(os.Args)+2)
	droppedJoin, droppedToken := false, false
	for i, a := range os.Args {
		switch {
		case !droppedJoin && a == "join" && i > 0 && os.Args[i-1] == "agent":
			droppedJoin = true
		case !droppedToken && a == token:
			droppedToken = true
		default:
			args = append(args, a)
		}
	}
	if !droppedJoin || !droppedToken {
		return fmt.Errorf("the command line does not read `agent join TOKEN`")
	}
	args = append(args, "--credentials", creds)
	return syscall.Exec(self, args, os.Environ())
}
