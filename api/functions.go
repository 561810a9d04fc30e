package api

import "strings"

// The ids of the contract's functions (the sixteen of the iii sandbox
// worker) and of the hutch extensions that sit beside them. Every function
// id is a constant of this package, declared once (the other groups are
// beside their types: FnGit*, FnProcess*, FnSnapshot*, ...); no other
// package spells one (TestNoFunctionIDLiterals).
const (
	FnRun         = "sandbox::run"
	FnCreate      = "sandbox::create"
	FnExec        = "sandbox::exec"
	FnStop        = "sandbox::stop"
	FnList        = "sandbox::list"
	FnCatalogList = "sandbox::catalog::list"

	FnFsLs    = "sandbox::fs::ls"
	FnFsStat  = "sandbox::fs::stat"
	FnFsMkdir = "sandbox::fs::mkdir"
	FnFsWrite = "sandbox::fs::write"
	FnFsRead  = "sandbox::fs::read"
	FnFsRm    = "sandbox::fs::rm"
	FnFsMv    = "sandbox::fs::mv"
	FnFsChmod = "sandbox::fs::chmod"
	FnFsGrep  = "sandbox::fs::grep"
	FnFsSed   = "sandbox::fs::sed"
)

// Hutch extensions beside the contract's functions.
const (
	// FnGet describes one sandbox.
	FnGet = "sandbox::get"
	// FnExecResult is sandbox::exec with a timeout as a result (timed_out
	// set, the output so far), the REST route's semantics; through
	// FnExec, the contract's, a timeout is S200.
	FnExecResult = "hutch::exec"
	// FnFsDownload streams a file's bytes: an entry event with its
	// FsEntry, then data events with its bytes in order, then an
	// FsDownloadResponse.
	FnFsDownload = "sandbox::fs::download"
	// FnMetrics is a live sandbox's resource use.
	FnMetrics = "sandbox::metrics"

	FnImageStatus = "hutch::image::status"
	FnImageList   = "hutch::image::list"
	FnImagePull   = "hutch::image::pull"
	FnImageRemove = "hutch::image::rm"
)

// FsFns are the contract's filesystem functions, in its order.
var FsFns = []string{FnFsLs, FnFsStat, FnFsMkdir, FnFsWrite, FnFsRead, FnFsRm, FnFsMv, FnFsChmod, FnFsGrep, FnFsSed}

// GitFns are the git functions, in the order of GitOps.
var GitFns = []string{FnGitInit, FnGitClone, FnGitStatus, FnGitAdd, FnGitCommit, FnGitDiff, FnGitLog, FnGitBranch,
	FnGitCheckout, FnGitReset, FnGitRestore, FnGitRemote, FnGitConfig, FnGitFetch, FnGitPush, FnGitPull}

// FnOp is the last part of function id fn: "ls" of sandbox::fs::ls, the
// {op} of the REST routes of a group of functions.
func FnOp(fn string) string {
	if i := strings.LastIndex(fn, "::"); i >= 0 {
		return fn[i+2:]
	}
	return fn
}
