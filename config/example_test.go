package config_test

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/deepgraph/deepgraph/config"
)

// A command defines its flags from the key table, and the loader resolves
// every key: flags beat the environment, which beats the config file, which
// beats the defaults. Explicit counts win over the effort preset.
func ExampleLoader() {
	fs := pflag.NewFlagSet("research", pflag.ContinueOnError)
	if err := config.AddFlags(fs, "effort", "number_of_initial_queries", "max_research_loops"); err != nil {
		panic(err)
	}
	_ = fs.Parse([]string{"--effort", "high", "--queries", "2"})

	cfg, err := config.Loader{
		Flags:         fs,
		UserConfigDir: func() (string, error) { return os.TempDir() + "/no-such-dir", nil },
	}.Load()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("queries:", cfg.InitialQueries, "from", cfg.Source("number_of_initial_queries"))
	fmt.Println("loops:", cfg.MaxLoops, "from", cfg.Source("max_research_loops"))
	// Output:
	// queries: 2 from flag --queries
	// loops: 10 from effort high (flag --effort)
}

// A bad value names the key, the value, what is allowed and its source.
func ExampleError() {
	fs := pflag.NewFlagSet("research", pflag.ContinueOnError)
	_ = config.AddFlags(fs, "max_research_loops")
	_ = fs.Parse([]string{"--loops", "-1"})
	_, err := config.Loader{Flags: fs, UserConfigDir: func() (string, error) { return os.TempDir() + "/no-such-dir", nil }}.Load()
	fmt.Println(err)
	// Output:
	// max_research_loops: -1 is not allowed: use a whole number from 1 to 50 (from flag --loops)
}

// Secrets print redacted, whatever the verb.
func ExampleSecret() {
	key := config.Secret("AIza-very-secret")
	fmt.Println(key, fmt.Sprintf("%v %#v", key, key))
	fmt.Println(len(key.Reveal()))
	// Output:
	// [redacted] [redacted] config.Secret("[redacted]")
	// 16
}

// Keys documents every setting; `research config keys` prints it.
func ExampleKeys() {
	for _, k := range config.Keys()[:3] {
		fmt.Printf("%s (default %s) %v %s\n", k.Name, k.Default, k.Env, k.Flag)
	}
	// Output:
	// model (default auto: the first provider with a key set (Gemini, OpenAI, Anthropic), else OLLAMA_HOST) [DEEPGRAPH_MODEL] --model
	// query_generator_model (default same as model) [DEEPGRAPH_QUERY_GENERATOR_MODEL] --query-model
	// reflection_model (default same as model) [DEEPGRAPH_REFLECTION_MODEL] --reflection-model
}
