package api

// CatalogRequest is the payload of sandbox::catalog::list (no fields).
type CatalogRequest struct{}

// CatalogImage is one entry of the catalog.
type CatalogImage struct {
	Name string `json:"name"`
	// OCIRef is the image's source: a custom image's reference as
	// configured; for a preset, the Debian recipe it is built from.
	OCIRef string `json:"oci_ref"`
	// Kind is "preset" or "custom".
	Kind string `json:"kind"`
}

// CatalogResponse is the result of sandbox::catalog::list: presets first,
// then custom images sorted by name.
type CatalogResponse struct {
	Images []CatalogImage `json:"images"`
	// Runtimes are the isolation runtimes this daemon has, whether this
	// host runs them and how. A hutch addition.
	Runtimes []RuntimeInfo `json:"runtimes,omitempty"`
}

// RuntimeInfo is one isolation runtime, as the catalog and /healthz list it.
type RuntimeInfo struct {
	Name string `json:"name"`
	// Mode is how it isolates on this host: gVisor's platform
	// ("systrap"), the microVM runtime's accelerator ("kvm", "tcg").
	Mode string `json:"mode,omitempty"`
	// Abilities are its optional operations ("pause,checkpoint,…", "none").
	Abilities string `json:"abilities"`
	// Available says this host runs it; Unavailable says why not.
	Available   bool   `json:"available"`
	Unavailable string `json:"unavailable,omitempty"`
	// Default marks the runtime of creates that name none.
	Default bool `json:"default,omitempty"`
}

// ImageListRequest is the payload of hutch::image::list (no fields).
type ImageListRequest struct{}

// ImageInfo is one catalog image with its cache state.
type ImageInfo struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	OCIRef string `json:"oci_ref"`
	// Allowed says image_allowlist lets sandboxes boot it.
	Allowed bool `json:"allowed"`
	// State is "missing", "building", "pulling" or "ready".
	State string `json:"state"`
	// ID is the content hash of the cached image (manifest digest of a
	// custom image, recipe hash of a preset).
	ID        string `json:"id,omitempty"`
	SizeBytes int64  `json:"size_bytes,omitempty"`
	// InUse counts the live sandboxes running the image.
	InUse int `json:"in_use"`
}

// ImageListResponse is the result of hutch::image::list, in catalog order.
type ImageListResponse struct {
	Images []ImageInfo `json:"images"`
}

// ImagePullRequest is the payload of hutch::image::pull.
type ImagePullRequest struct {
	Name string `json:"name"`
}

// ImageRemoveRequest is the payload of hutch::image::rm.
type ImageRemoveRequest struct {
	Name string `json:"name"`
}

// ImageRemoveResponse is the result of hutch::image::rm.
type ImageRemoveResponse struct {
	Name string `json:"name"`
	// Removed is false when the image was not cached.
	Removed bool `json:"removed"`
}
