package cluster

import (
	"errors"
	"strings"
	"testing"
)

// featureImage is an image with brokers whose builds support
// metadata.version up to the given levels.
func featureImage(t *testing.T, maxLevels ...int16) *Image {
	t.Helper()
	im := NewImage("c")
	var recs []Record
	for i, m := range maxLevels {
		recs = append(recs, RegisterBroker{ID: NodeID(i + 1), IncarnationID: "inc", Features: map[string]FeatureRange{MetadataVersion: {Min: 1, Max: m}}})
	}
	im, err := im.With(recs...)
	if err != nil {
		t.Fatal(err)
	}
	return im
}

func TestFinalizeFeatureRules(t *testing.T) {
	im := featureImage(t, 1, 1, 1)
	if got := im.FeatureLevel(MetadataVersion); got != MetadataVersionFeatures {
		t.Fatalf("a cluster that never finalized runs at %d, want %d", got, MetadataVersionFeatures)
	}
	for _, tc := range []struct {
		name  string
		im    *Image
		feat  string
		level int16
		want  error
	}{
		{"unknown feature", im, "frobnication.version", 1, ErrInvalidFeature},
		{"a node too old", featureImage(t, 2, 1, 2), MetadataVersion, 2, ErrInvalidFeature},
		{"every node new enough", featureImage(t, 2, 2, 3), MetadataVersion, 2, nil},
		{"the level already finalized", im, MetadataVersion, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := CheckFinalize(tc.im, tc.feat, tc.level); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("CheckFinalize(%s %d) = %v, want %v", tc.feat, tc.level, err, tc.want)
			}
		})
	}
	// A node without Features (none registers so from this build on) is
	// taken to support only the first level.
	bare, _ := NewImage("c").With(RegisterBroker{ID: 1, IncarnationID: "x"})
	if err := CheckFinalize(bare, MetadataVersion, 2); !errors.Is(err, ErrInvalidFeature) {
		t.Fatalf("a node without features let level 2 through: %v", err)
	}
}

func TestFinalizedLevelNeverGoesDown(t *testing.T) {
	im := featureImage(t, 1)
	// Pretend level 3 was finalized by a newer build (the image is what
	// a snapshot would restore).
	im.features = map[string]int16{MetadataVersion: 3}
	_, err := im.With(FinalizeFeature{Name: MetadataVersion, Level: 2})
	if !errors.Is(err, ErrFeatureDowngrade) {
		t.Fatalf("finalizing 2 over 3 = %v, want a downgrade refusal", err)
	}
}

func TestOldBuildStopsAtAnUnknownLevel(t *testing.T) {
	// A build replaying a log that finalized a level beyond it must stop,
	// not read on: what follows may be records it would misread.
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(r.(string), "run a newer build") {
			t.Fatalf("applying a level beyond this build: recovered %v, want a panic naming the fix", r)
		}
	}()
	_, _ = NewImage("c").With(FinalizeFeature{Name: MetadataVersion, Level: MetadataVersionLatest + 1})
}

func TestRegistrationNeedsTheFinalizedLevel(t *testing.T) {
	im := featureImage(t, 1)
	im.features = map[string]int16{MetadataVersion: 2}
	old := Registration{ID: 9, IncarnationID: "old", Features: map[string]FeatureRange{MetadataVersion: {Min: 1, Max: 1}}}
	if err := CheckRegistration(im, old); !errors.Is(err, ErrUnsupportedFeature) {
		t.Fatalf("an old build registered in a cluster at level 2: %v", err)
	}
	if err := CheckRegistration(im, Registration{ID: 9, IncarnationID: "new", Features: map[string]FeatureRange{MetadataVersion: {Min: 1, Max: 2}}}); err != nil {
		t.Fatalf("a build supporting level 2 was refused: %v", err)
	}
}

func TestFeaturesSurviveSnapshotAndMetaFile(t *testing.T) {
	im := featureImage(t, 1)
	im.features = map[string]int16{MetadataVersion: MetadataVersionLatest}
	b, err := EncodeImage(im)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeImage(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.FeatureLevel(MetadataVersion); got != MetadataVersionLatest {
		t.Fatalf("after a snapshot metadata.version is %d, want %d", got, MetadataVersionLatest)
	}
	if r := back.brokers[1].Features[MetadataVersion]; r.Max != 1 {
		t.Fatalf("a broker's supported range did not survive the snapshot: %+v", r)
	}
	// A snapshot from a cluster finalized beyond this build is refused.
	im.features = map[string]int16{MetadataVersion: MetadataVersionLatest + 1}
	b, _ = EncodeImage(im)
	if _, err := DecodeImage(b); !errors.Is(err, ErrUnsupportedFeature) {
		t.Fatalf("restoring a snapshot beyond this build = %v, want ErrUnsupportedFeature", err)
	}
}
