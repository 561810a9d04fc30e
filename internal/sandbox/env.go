package sandbox

// A sandbox's env: its own layer (the create's env, then what
// sandbox::env::* set through Handle.ChangeEnv, envsvc) over the image's.

// env returns the env every exec of sb starts from.
func (sb *sandbox) env() []string {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.baseEnv
}

// setEnvLayer makes layer sb's own env.
func (sb *sandbox) setEnvLayer(layer []string) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.rec.Env = layer
	sb.baseEnv = baseEnv(sb.user, sb.image, layer)
}
