package api

import (
	"fmt"
	"slices"
	"strings"
)

// Tool offers a function to agents as a tool of hutch's MCP server
// (internal/mcpserver): the function's request schema is the tool's input
// schema, its result the tool's result. engine::functions::list shows it
// as the function's metadata "mcp_tool".
type Tool struct {
	// Name is the tool's name (snake_case, unique).
	Name string `json:"name"`
	// Area is the tool's group, one of ToolAreas, which `hutch mcp
	// --tools` and /mcp?tools= choose.
	Area string `json:"area"`
	// Description is written for an agent: when to use the tool and what
	// it answers.
	Description string `json:"description"`
	// The hints MCP clients read before they call (ToolAnnotations):
	// ReadOnly changes nothing; Destructive may destroy (a stop, a
	// delete, an overwrite); Idempotent does nothing more when repeated
	// with the same input; OpenWorld reaches outside hutch (the network).
	ReadOnly    bool `json:"read_only,omitempty"`
	Destructive bool `json:"destructive,omitempty"`
	Idempotent  bool `json:"idempotent,omitempty"`
	OpenWorld   bool `json:"open_world,omitempty"`
	// Default puts the tool in the default set.
	Default bool `json:"default,omitempty"`
	// Collect, for a stream that does not end by itself (events,
	// metrics), makes the tool answer the first Collect events (or as
	// many as the agent's count asks, up to MaxCollect) that come within
	// its wait.
	Collect int `json:"collect,omitempty"`
}

// MetadataTool is the key of a function's Tool in the metadata of its
// FunctionInfo.
const MetadataTool = "mcp_tool"

// MaxCollect bounds the events one call of a collecting tool answers.
const MaxCollect = 100

// The tool areas, in the order tools are listed.
const (
	ToolAreaSandboxes   = "sandboxes"
	ToolAreaExec        = "exec"
	ToolAreaInterpreter = "interpreter"
	ToolAreaProcesses   = "processes"
	ToolAreaFiles       = "files"
	ToolAreaGit         = "git"
	ToolAreaEnv         = "env"
	ToolAreaSnapshots   = "snapshots"
	ToolAreaTemplates   = "templates"
	ToolAreaPorts       = "ports"
	ToolAreaEvents      = "events"
	ToolAreaMetrics     = "metrics"
	ToolAreaAlerts      = "alerts"
	ToolAreaNetworks    = "networks"
	ToolAreaVolumes     = "volumes"
	ToolAreaJobs        = "jobs"
)

// ToolAreas are the areas MCP tools belong to.
var ToolAreas = []string{ToolAreaSandboxes, ToolAreaExec, ToolAreaInterpreter, ToolAreaProcesses, ToolAreaFiles, ToolAreaGit,
	ToolAreaEnv, ToolAreaSnapshots, ToolAreaTemplates, ToolAreaPorts, ToolAreaEvents, ToolAreaMetrics, ToolAreaAlerts,
	ToolAreaNetworks, ToolAreaVolumes, ToolAreaJobs}

// The tool sets besides the areas.
const (
	ToolSetAll     = "all"
	ToolSetDefault = "default"
)

// ToolSet is a choice of MCP tools: "all", or "default" and areas, comma
// separated ("default,env,volumes"; "" is "default").
type ToolSet struct {
	All     bool
	Default bool
	Areas   []string
}

// ParseToolSet reads a tool set, refusing an unknown word with the words
// it knows.
func ParseToolSet(spec string) (ToolSet, error) {
	var s ToolSet
	if strings.TrimSpace(spec) == "" {
		return ToolSet{Default: true}, nil
	}
	for _, w := range strings.Split(spec, ",") {
		switch w = strings.TrimSpace(w); {
		case w == ToolSetAll:
			s.All = true
		case w == ToolSetDefault:
			s.Default = true
		case slices.Contains(ToolAreas, w):
			if !slices.Contains(s.Areas, w) {
				s.Areas = append(s.Areas, w)
			}
		default:
			return ToolSet{}, fmt.Errorf("unknown tool set %q: give all, default or areas (%s), comma separated", w, strings.Join(ToolAreas, ", "))
		}
	}
	return s, nil
}

// Has says whether a tool of area, in the default set or not, is in s.
func (s ToolSet) Has(area string, isDefault bool) bool {
	return s.All || (s.Default && isDefault) || slices.Contains(s.Areas, area)
}
