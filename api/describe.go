package api

import "encoding/json"

// Function ids that describe the function table (the engine's own names,
// served over every transport).
const (
	FnFunctionsList = "engine::functions::list"
	FnFunctionsInfo = "engine::functions::info"
)

// EngineFnPrefix starts the ids of the engine's own functions, which
// engine::functions::list leaves out unless asked (include_internal).
const EngineFnPrefix = "engine::"

// FunctionInfo describes a function: what it does and the JSON Schemas of
// its request and result (for a stream, its final value).
type FunctionInfo struct {
	FunctionID     string          `json:"function_id"`
	Description    string          `json:"description,omitempty"`
	RequestFormat  json.RawMessage `json:"request_format,omitempty"`
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
	Metadata       map[string]any  `json:"metadata,omitempty"`
}

// FunctionsListRequest is the payload of engine::functions::list.
type FunctionsListRequest struct {
	// IncludeInternal lists the engine's own functions (engine::*) too.
	IncludeInternal bool `json:"include_internal,omitempty"`
}

// FunctionsInfoRequest is the payload of engine::functions::info: one
// function or several.
type FunctionsInfoRequest struct {
	FunctionID  string   `json:"function_id,omitempty"`
	FunctionIDs []string `json:"function_ids,omitempty"`
}

// FunctionsResponse is the result of engine::functions::list and ::info.
type FunctionsResponse struct {
	Functions []FunctionInfo `json:"functions"`
}
