// Package quota keeps each owner within the limits of the daemon's quota
// block (issue 38): live sandboxes and their cpus and memory, snapshots
// and their bytes, templates, volumes and their sizes, exposed ports,
// queued jobs and running processes. The function table asks Admit before every call (see
// functions.Quota); a call that would pass a limit is refused with S401
// naming the limit and its use. Use is counted from the services the
// table itself calls (what the owner holds now) plus what admitted calls
// still in flight will add, under a lock per owner, so that concurrent
// calls of one owner cannot pass a limit together while other owners
// never wait on it.
package quota

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
)

// Service is the quota of every owner. It implements functions.Quota.
type Service struct {
	cfg  *config.Config
	deps functions.Deps

	mu     sync.Mutex
	owners map[string]*owner // guarded by mu

	// limits is the quota block in force: cfg's, until a reload swaps in
	// another (SetQuota; issue 41: 4).
	limits atomic.Pointer[config.Quota]
}

var _ functions.Quota = (*Service)(nil)

// owner is one owner's admission state.
type owner struct {
	// mu serializes the owner's admissions; it guards pending.
	mu      sync.Mutex
	pending use
}

// use is what an owner holds, or what a call adds, per limit.
type use struct {
	sandboxes, cpus, memoryMB    uint64
	snapshots, snapshotBytes     uint64
	templates, volumes, volumeMB uint64
	ports, jobs                  uint64
	processes                    uint64
}

func (u *use) add(v use, sign int) {
	f := func(a *uint64, b uint64) {
		if sign > 0 {
			*a += b
		} else {
			*a -= min(*a, b)
		}
	}
	f(&u.sandboxes, v.sandboxes)
	f(&u.cpus, v.cpus)
	f(&u.memoryMB, v.memoryMB)
	f(&u.snapshots, v.snapshots)
	f(&u.snapshotBytes, v.snapshotBytes)
	f(&u.templates, v.templates)
	f(&u.volumes, v.volumes)
	f(&u.volumeMB, v.volumeMB)
	f(&u.ports, v.ports)
	f(&u.jobs, v.jobs)
	f(&u.processes, v.processes)
}

// New returns the quotas of cfg over the services of deps (those the
// table is built on; a nil service counts nothing).
func New(cfg *config.Config, deps functions.Deps) *Service {
	s := &Service{cfg: cfg, deps: deps, owners: map[string]*owner{}}
	s.SetQuota(cfg.Quota)
	return s
}

// SetQuota puts q in force for the admissions and usages that follow (a
// config reload; issue 41: 4). Calls already admitted keep their count.
func (s *Service) SetQuota(q config.Quota) { s.limits.Store(&q) }

// limitsOf is owner's limits under the quota block in force.
func (s *Service) limitsOf(owner string) config.QuotaLimits { return s.limits.Load().Of(owner) }

func (s *Service) owner(name string) *owner {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.owners[name]
	if o == nil {
		o = &owner{}
		s.owners[name] = o
	}
	return o
}

// item is one limit: its name, its use in u and its limit in l.
type item struct {
	name  string
	used  func(u use) uint64
	limit func(l config.QuotaLimits) uint64
}

// items are the limits, in the order Usage lists them.
var items = []item{
	{"sandboxes", func(u use) uint64 { return u.sandboxes }, func(l config.QuotaLimits) uint64 { return uint64(max(l.Sandboxes, 0)) }},
	{"cpus", func(u use) uint64 { return u.cpus }, func(l config.QuotaLimits) uint64 { return uint64(max(l.CPUs, 0)) }},
	{"memory_mb", func(u use) uint64 { return u.memoryMB }, func(l config.QuotaLimits) uint64 { return l.MemoryMB }},
	{"snapshots", func(u use) uint64 { return u.snapshots }, func(l config.QuotaLimits) uint64 { return uint64(max(l.Snapshots, 0)) }},
	{"snapshot_mb", func(u use) uint64 { return u.snapshotBytes >> 20 }, func(l config.QuotaLimits) uint64 { return l.SnapshotMB }},
	{"templates", func(u use) uint64 { return u.templates }, func(l config.QuotaLimits) uint64 { return uint64(max(l.Templates, 0)) }},
	{"volumes", func(u use) uint64 { return u.volumes }, func(l config.QuotaLimits) uint64 { return uint64(max(l.Volumes, 0)) }},
	{"volume_mb", func(u use) uint64 { return u.volumeMB }, func(l config.QuotaLimits) uint64 { return l.VolumeMB }},
	{"ports", func(u use) uint64 { return u.ports }, func(l config.QuotaLimits) uint64 { return uint64(max(l.Ports, 0)) }},
	{"jobs", func(u use) uint64 { return u.jobs }, func(l config.QuotaLimits) uint64 { return uint64(max(l.Jobs, 0)) }},
	{"processes", func(u use) uint64 { return u.processes }, func(l config.QuotaLimits) uint64 { return uint64(max(l.Processes, 0)) }},
}

// key is the config key of limit name for owner.
func (s *Service) key(owner, name string) string {
	if _, ok := s.limits.Load().Owners[owner]; ok {
		return "quota.owners." + owner + "." + name
	}
	return "quota.default." + name
}

// Usage reports what the caller's owner holds against its limits.
func (s *Service) Usage(ctx context.Context, _ api.QuotaRequest) (api.QuotaResponse, error) {
	name := auth.OwnerFrom(ctx)
	held, err := s.held(ctx, config.QuotaLimits{}, true)
	if err != nil {
		return api.QuotaResponse{}, err
	}
	o := s.owner(name)
	o.mu.Lock()
	held.add(o.pending, 1)
	o.mu.Unlock()
	limits := s.limitsOf(name)
	resp := api.QuotaResponse{Owner: name, Items: make([]api.QuotaItem, 0, len(items))}
	for _, it := range items {
		resp.Items = append(resp.Items, api.QuotaItem{Name: it.name, Used: it.used(held), Limit: it.limit(limits), Key: s.key(name, it.name)})
	}
	return resp, nil
}

// Admit refuses (S401) a call of function id on req that would take the
// caller's owner past a limit; otherwise it counts what the call adds
// until done is called (when the call has returned).
func (s *Service) Admit(ctx context.Context, id string, req any) (done func(), err error) {
	name := auth.OwnerFrom(ctx)
	limits := s.limitsOf(name)
	if limits == (config.QuotaLimits{}) {
		return func() {}, nil
	}
	adds, err := s.adds(ctx, req)
	if err != nil || adds == (use{}) {
		return func() {}, err
	}
	o := s.owner(name)
	o.mu.Lock()
	defer o.mu.Unlock()
	held, err := s.held(ctx, limits, false)
	if err != nil {
		return nil, err
	}
	held.add(o.pending, 1)
	for _, it := range items {
		limit, add, used := it.limit(limits), it.used(adds), it.used(held)
		// A snapshot's size is known once taken: a new one is refused
		// when the snapshots already fill snapshot_mb.
		over := add > 0 && used+add > limit
		if it.name == "snapshot_mb" {
			over = adds.snapshots > 0 && used >= limit
		}
		if limit > 0 && over {
			return nil, errdefs.New(errdefs.CodeQuota, "%s would pass owner %q's quota %s = %d: %d used, the call adds %d",
				id, name, s.key(name, it.name), limit, used, add).
				WithFix(nil, "free some (stop a sandbox, delete a snapshot, template or volume, unexpose a port, cancel a job), or ask the operator to raise "+s.key(name, it.name))
		}
	}
	o.pending.add(adds, 1)
	var once sync.Once
	return func() {
		once.Do(func() {
			o.mu.Lock()
			o.pending.add(adds, -1)
			o.mu.Unlock()
		})
	}, nil
}

// adds is what a call on req adds to its owner's use.
func (s *Service) adds(ctx context.Context, req any) (use, error) {
	sandbox := func(cpus, memoryMB uint32, n uint64) use {
		return use{sandboxes: n, cpus: uint64(cmpOr(cpus, s.cfg.DefaultCPUs)) * n, memoryMB: uint64(cmpOr(memoryMB, s.cfg.DefaultMemoryMB)) * n}
	}
	switch r := req.(type) {
	case api.CreateRequest:
		if r.Template != "" && s.deps.Snapshots != nil && (r.CPUs == 0 || r.MemoryMB == 0) {
			// A create from a template takes the template's shape for what
			// the request leaves out.
			tm, err := s.deps.Snapshots.GetTemplate(ctx, api.TemplateRequest{Name: r.Template})
			if err != nil {
				return use{}, err
			}
			return sandbox(cmpOr(r.CPUs, tm.CPUs), cmpOr(r.MemoryMB, tm.MemoryMB), 1), nil
		}
		return sandbox(r.CPUs, r.MemoryMB, 1), nil
	case api.RunRequest:
		return sandbox(0, 0, 1), nil
	case api.ForkRequest:
		src, err := s.deps.Sandboxes.Get(ctx, api.GetRequest{SandboxID: r.SandboxID})
		if err != nil {
			return use{}, err
		}
		return sandbox(src.CPUs, src.MemoryMB, uint64(max(r.Count, 1))), nil
	case api.SnapshotCreateRequest:
		return use{snapshots: 1}, nil
	case api.TemplateCreateRequest:
		return use{templates: 1}, nil
	case api.VolumeCreateRequest:
		return use{volumes: 1, volumeMB: cmpOr(r.SizeMB, s.cfg.VolumeDefaultSizeMB)}, nil
	case api.PortExposeRequest:
		return use{ports: 1}, nil
	case api.JobSubmitRequest:
		return use{jobs: 1}, nil
	case api.ExecRequest, api.ProcessStartRequest:
		return use{processes: 1}, nil
	}
	return use{}, nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// held counts what the caller's owner holds now, for the limits set in l
// (every limit with all).
func (s *Service) held(ctx context.Context, l config.QuotaLimits, all bool) (use, error) {
	var u use
	want := func(v ...uint64) bool {
		if all {
			return true
		}
		for _, x := range v {
			if x > 0 {
				return true
			}
		}
		return false
	}
	var live []api.SandboxInfo
	if s.deps.Sandboxes != nil && want(uint64(l.Sandboxes), uint64(l.CPUs), l.MemoryMB, uint64(l.Ports), uint64(l.Processes)) {
		list, err := s.deps.Sandboxes.List(ctx, api.ListRequest{})
		if err != nil {
			return u, fmt.Errorf("counting sandboxes for the quota: %w", err)
		}
		for _, sb := range list.Sandboxes {
			if sb.State == "stopped" || sb.State == "stopping" {
				continue
			}
			live = append(live, sb)
			u.sandboxes++
			u.cpus += uint64(sb.CPUs)
			u.memoryMB += uint64(sb.MemoryMB)
		}
	}
	if s.deps.Snapshots != nil && want(uint64(l.Snapshots), l.SnapshotMB) {
		list, err := s.deps.Snapshots.ListSnapshots(ctx, api.SnapshotListRequest{})
		if err != nil {
			return u, fmt.Errorf("counting snapshots for the quota: %w", err)
		}
		u.snapshots = uint64(len(list.Snapshots))
		for _, sn := range list.Snapshots {
			u.snapshotBytes += uint64(max(sn.SizeBytes, 0))
		}
	}
	if s.deps.Snapshots != nil && want(uint64(l.Templates)) {
		list, err := s.deps.Snapshots.ListTemplates(ctx, api.TemplateListRequest{})
		if err != nil {
			return u, fmt.Errorf("counting templates for the quota: %w", err)
		}
		u.templates = uint64(len(list.Templates))
	}
	if s.deps.Volumes != nil && want(uint64(l.Volumes), l.VolumeMB) {
		list, err := s.deps.Volumes.ListVolumes(ctx, api.VolumeListRequest{})
		if err != nil {
			return u, fmt.Errorf("counting volumes for the quota: %w", err)
		}
		u.volumes = uint64(len(list.Volumes))
		for _, v := range list.Volumes {
			u.volumeMB += v.SizeMB
		}
	}
	if s.deps.Ports != nil && want(uint64(l.Ports)) {
		for _, sb := range live {
			list, err := s.deps.Ports.ListPorts(ctx, api.PortListRequest{SandboxID: sb.SandboxID})
			if err != nil {
				continue // the sandbox ended meanwhile
			}
			u.ports += uint64(len(list.Ports))
		}
	}
	if s.deps.Processes != nil && want(uint64(l.Processes)) {
		for _, sb := range live {
			list, err := s.deps.Processes.ListProcesses(ctx, api.ProcessListRequest{SandboxID: sb.SandboxID})
			if err != nil {
				continue // the sandbox ended meanwhile
			}
			for _, p := range list.Processes {
				if p.State != "Z" {
					u.processes++
				}
			}
		}
	}
	if s.deps.Jobs != nil && want(uint64(l.Jobs)) {
		for _, state := range []string{api.JobQueued, api.JobRunning} {
			list, err := s.deps.Jobs.List(ctx, api.JobListRequest{State: state})
			if err != nil {
				return u, fmt.Errorf("counting jobs for the quota: %w", err)
			}
			u.jobs += uint64(len(list.Jobs))
		}
	}
	return u, nil
}
