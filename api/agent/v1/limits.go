package agentv1

// WindowBytes is the HTTP/2 flow-control window of the agent connection,
// set on both sides. Fixed windows turn off gRPC's bandwidth-estimation
// pings: every frame that crosses the sandbox wall costs a wakeup.
const WindowBytes = 8 << 20
