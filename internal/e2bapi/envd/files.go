package envd

// envd's HTTP file routes: GET /files streams a file out of the sandbox,
// POST /files streams one or several in (multipart/form-data, or the raw
// body as application/octet-stream; gzip Content-Encoding accepted). Both
// go through the table's streamed transfers, never holding a whole file.

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"strconv"
	"strings"

	"connectrpc.com/connect"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/functions"
)

// maxUploadParts bounds the files of one multipart upload.
const maxUploadParts = 1000

// writtenEntry is one file of an upload's answer.
type writtenEntry struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Path string `json:"path"`
	// Metadata is the metadata the upload set (issue 40).
	Metadata map[string]string `json:"metadata,omitempty"`
}

// download is GET /files?path=P&username=U: the file's bytes, gzipped
// when the client accepts gzip.
func (s *server) download(w http.ResponseWriter, r *http.Request) {
	sc, err := scopeOf(r.Header, r.URL.Query().Get("username"))
	if err != nil {
		s.fileError(w, err)
		return
	}
	p := s.resolve(r.Context(), sc, r.URL.Query().Get("path"))
	st, err := stream(r.Context(), s.t, api.FnFsDownload, api.FsDownloadRequest{SandboxID: sc.sandbox, User: sc.user, Path: p})
	if err != nil {
		s.fileError(w, err)
		return
	}
	defer st.Close()
	ev, err := st.Expect(r.Context(), functions.EventEntry)
	if err != nil {
		s.fileError(w, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(p)}))
	out := io.Writer(w)
	finish := func() error { return nil }
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
		h.Add("Vary", "Accept-Encoding")
		zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed) // a valid level: no error
		out, finish = zw, zw.Close
	} else if e, ok := ev.Data.(api.FsEntry); ok && e.Size > 0 {
		h.Set("Content-Length", strconv.FormatInt(e.Size, 10))
	}
	w.WriteHeader(http.StatusOK)
	for {
		ev, err := st.Next(r.Context())
		if errors.Is(err, io.EOF) {
			err = finish()
			if err == nil {
				return
			}
		}
		if err == nil && ev.Type == functions.EventData {
			_, err = out.Write(ev.Bytes)
		}
		if err != nil {
			// The client must see a cut-off body, never a short file.
			s.log.Warn("e2b download cut off", "sandbox", sc.sandbox, "path", p, "err", err)
			panic(http.ErrAbortHandler)
		}
	}
}

// upload is POST /files?path=P&username=U. Without path each multipart
// part's file name is its full target path.
func (s *server) upload(w http.ResponseWriter, r *http.Request) {
	sc, err := scopeOf(r.Header, r.URL.Query().Get("username"))
	if err != nil {
		s.fileError(w, err)
		return
	}
	target := r.URL.Query().Get("path")
	body := io.Reader(r.Body)
	if enc := r.Header.Get("Content-Encoding"); enc != "" {
		if !strings.EqualFold(enc, "gzip") {
			s.fileError(w, invalid("content encoding %q is not gzip", enc))
			return
		}
		zr, err := gzip.NewReader(body)
		if err != nil {
			s.fileError(w, invalid("the gzip body is malformed: %v", err))
			return
		}
		defer zr.Close()
		body = zr
	}
	var written []writtenEntry
	ctype, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ctype == "multipart/form-data" {
		written, err = s.uploadParts(r, sc, target, multipart.NewReader(body, params["boundary"]))
	} else {
		var e writtenEntry
		if e, err = s.uploadOne(r, sc, target, body); err == nil {
			written = []writtenEntry{e}
		}
	}
	if err != nil {
		s.fileError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(written)
}

// uploadParts writes each "file" part of mr: to target, or to the path
// its file name gives.
func (s *server) uploadParts(r *http.Request, sc scope, target string, mr *multipart.Reader) ([]writtenEntry, error) {
	var out []writtenEntry
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			if len(out) == 0 {
				return nil, invalid("the form has no file part")
			}
			return out, nil
		}
		if err != nil {
			return nil, invalid("the multipart body is malformed: %v", err)
		}
		name, p := partNames(part)
		if name != "file" {
			part.Close()
			continue
		}
		if len(out) == maxUploadParts {
			return nil, connect.NewError(connect.CodeResourceExhausted, errorf("more than %d files in one upload", maxUploadParts))
		}
		if target != "" {
			p = target
		}
		e, err := s.uploadOne(r, sc, p, part)
		part.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
}

// partNames are a part's form name and file name, read from its header
// itself: Part.FileName drops the directories the file name holds.
func partNames(part *multipart.Part) (name, filename string) {
	_, params, err := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
	if err != nil {
		return "", ""
	}
	return params["name"], params["filename"]
}

// uploadOne streams body into file p, creating its missing parents, as
// envd writes for the user (writeAsUser).
func (s *server) uploadOne(r *http.Request, sc scope, p string, body io.Reader) (writtenEntry, error) {
	if p == "" {
		return writtenEntry{}, invalid("no path: give ?path= or a file name")
	}
	p = s.resolve(r.Context(), sc, p)
	md := uploadMetadata(r.Header)
	if err := s.writeAsUser(r.Context(), sc, api.FsWriteRequest{SandboxID: sc.sandbox, User: sc.user, Path: p, Parents: true, Body: body, Metadata: md}); err != nil {
		return writtenEntry{}, connectError(err)
	}
	return writtenEntry{Name: path.Base(p), Type: "file", Path: p, Metadata: md}, nil
}

// metadataHeader is the prefix of the request headers that carry an
// upload's file metadata (envd 0.6.2), one header a key.
const metadataHeader = "X-Metadata-"

// uploadMetadata is the file metadata of an upload's headers, nil when
// none. HTTP header names are case-insensitive, so keys are lower case;
// the agent checks the keys and values against its limits.
func uploadMetadata(h http.Header) map[string]string {
	var md map[string]string
	for name, values := range h {
		key, ok := strings.CutPrefix(http.CanonicalHeaderKey(name), metadataHeader)
		if !ok || len(values) == 0 {
			continue
		}
		if md == nil {
			md = make(map[string]string)
		}
		md[strings.ToLower(key)] = values[0]
	}
	return md
}

// fileError answers err as envd's {code, message} with its HTTP status.
func (s *server) fileError(w http.ResponseWriter, err error) {
	ce := connectError(err).(*connect.Error)
	status := httpStatus(ce.Code())
	if status == http.StatusInternalServerError {
		s.log.Warn("e2b file route failed", "err", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"code": status, "message": ce.Message()})
}

// acceptsGzip reports whether an Accept-Encoding header accepts gzip.
func acceptsGzip(h string) bool {
	for _, part := range strings.Split(h, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		q, ok := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q=")
		return !ok || strings.Trim(q, "0.") != ""
	}
	return false
}
