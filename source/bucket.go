package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/driftguard/driftguard/render"
)

// bucketState is what the Fetcher keeps of a bucket prefix: a client (it
// remembers the bucket's region, so a listing is one request) and the
// objects of the last revision, so that a new revision downloads only the
// objects whose ETag changed.
type bucketState struct {
	key     string
	client  *minio.Client
	objects map[string]bucketObject
}

type bucketObject struct {
	etag string
	data []byte
}

// listedObject is an entry of a bucket listing.
type listedObject struct {
	key, etag string
	size      int64
}

// bucketRevision is the revision of a bucket prefix: sha256: of the keys
// and ETags of its objects, sorted by key.
func bucketRevision(objs []listedObject) string {
	h := sha256.New()
	for _, o := range objs {
		fmt.Fprintf(h, "%s\x00%s\n", o.key, o.etag)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// resolveBucket lists the prefix (one request for up to 1000 objects) and
// digests the list.
func (f *Fetcher) resolveBucket(ctx context.Context, st *state, req Request) (target, error) {
	a := req.Artifact
	if st.bucket == nil {
		st.bucket = &bucketState{}
	}
	bs := st.bucket
	client, err := f.bucketClient(bs, a)
	if err != nil {
		return target{}, err
	}
	prefix := strings.TrimPrefix(a.Prefix, "/")
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	var objs []listedObject
	var total int64
	for o := range client.ListObjectsIter(ctx, a.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return target{}, explainBucket(o.Err, a)
		}
		if strings.HasSuffix(o.Key, "/") {
			continue // a folder marker
		}
		total += o.Size
		what := fmt.Sprintf("bucket %s prefix %q", a.Bucket, prefix)
		if len(objs) >= f.opts.MaxFiles {
			return target{}, FilesError(what, f.opts.MaxFiles)
		}
		if total > f.opts.MaxUnpackedBytes {
			return target{}, UnpackedSizeError(what, f.opts.MaxUnpackedBytes)
		}
		objs = append(objs, listedObject{key: o.Key, etag: strings.Trim(o.ETag, `"`), size: o.Size})
	}
	sort.Slice(objs, func(i, j int) bool { return objs[i].key < objs[j].key })
	rev := bucketRevision(objs)
	if req.Ref != "" && req.Ref != rev {
		return target{}, fmt.Errorf("bucket %s holds revision %s now, not %s: a bucket keeps no history", a.Bucket, ShortRevision(rev), ShortRevision(req.Ref))
	}
	return target{rev: rev, load: func(ctx context.Context) (fs.FS, string, error) {
		files := make(map[string][]byte, len(objs))
		kept := make(map[string]bucketObject, len(objs))
		// What the objects download, in all, as it arrives: a listing
		// states sizes, a server may send more.
		left := f.opts.MaxFetchBytes
		for _, o := range objs {
			p, err := entryPath(o.key)
			if err != nil || p == "" {
				return nil, "", &render.RenderError{Path: o.key, Err: fmt.Errorf("object key is not a file path")}
			}
			if old, ok := bs.objects[o.key]; ok && old.etag == o.etag {
				files[p], kept[o.key] = old.data, old
				continue
			}
			data, err := getObject(ctx, client, a, o.key, left)
			if errors.Is(err, errTooLarge) {
				return nil, "", &render.RenderError{Path: o.key, Err: FetchSizeError(fmt.Sprintf("bucket %s prefix %q", a.Bucket, prefix), f.opts.MaxFetchBytes)}
			}
			if err != nil {
				return nil, "", err
			}
			left -= int64(len(data))
			files[p], kept[o.key] = data, bucketObject{etag: o.etag, data: data}
		}
		bs.objects = kept
		return newMemFS(files, time.Time{}), cleanDir(prefix), nil
	}}, nil
}

// getObject downloads an object, failing with errTooLarge beyond max bytes.
func getObject(ctx context.Context, client *minio.Client, a *ArtifactSource, key string, max int64) ([]byte, error) {
	obj, err := client.GetObject(ctx, a.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, explainBucket(err, a))
	}
	defer func() { _ = obj.Close() }()
	data, err := readAllLimit(obj, max)
	if errors.Is(err, errTooLarge) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, explainBucket(err, a))
	}
	return data, nil
}

// bucketClient returns the client of bs, made again when the endpoint,
// region or credentials changed.
func (f *Fetcher) bucketClient(bs *bucketState, a *ArtifactSource) (*minio.Client, error) {
	key := credentialsKey(a) + "\x00" + a.Endpoint + "\x00" + a.Region
	if bs.client != nil && bs.key == key {
		return bs.client, nil
	}
	creds := credentials.NewStaticV4("", "", "")
	if c := a.Credentials; c != nil {
		creds = credentials.NewStaticV4(c.AccessKey, c.SecretKey, c.SessionToken)
	}
	client, err := minio.New(a.Endpoint, &minio.Options{
		Creds: creds, Secure: !a.Insecure, Region: a.Region, Transport: f.http, MaxRetries: 2,
	})
	if err != nil {
		return nil, fmt.Errorf("%s.endpoint: %w", a.Field, err)
	}
	bs.client, bs.key = client, key
	return client, nil
}

// explainBucket makes a refused request name the Secret the credentials
// came from.
func explainBucket(err error, a *ArtifactSource) error {
	resp := minio.ToErrorResponse(err)
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden,
		resp.Code == "AccessDenied", resp.Code == "InvalidAccessKeyId", resp.Code == "SignatureDoesNotMatch":
		return fmt.Errorf("bucket %s: %w; %s", a.Bucket, err, credentialsHint(a, "bucket"))
	case resp.Code == "NoSuchBucket":
		return fmt.Errorf("bucket %s does not exist at %s: %w", a.Bucket, a.Endpoint, err)
	}
	return fmt.Errorf("bucket %s: %w", a.Bucket, err)
}
