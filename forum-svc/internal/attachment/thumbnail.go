package attachment

import (
	"bytes"
	"image"
	_ "image/gif" // registers GIF with image.Decode and image.DecodeConfig
	"image/jpeg"
	"image/png"
	"io"
)

// ThumbnailSize bounds a thumbnail's longer side, in pixels.
const ThumbnailSize = 400

// MaxThumbnailPixels bounds the images that are scaled: a decoded image takes up to 4 bytes a
// pixel (64 MB here), so a small file that declares a huge image (a decompression bomb) is
// refused from its header, before anything is decoded.
const MaxThumbnailPixels = 16_000_000

// thumbnailTypes are the sniffed types this service decodes.
var thumbnailTypes = []string{"image/png", "image/jpeg", "image/gif"}

// MakeThumbnail reads an image's header, refuses one of more than MaxThumbnailPixels
// (ErrNoThumbnail) without decoding it, decodes it, and scales it down to ThumbnailSize on its
// longer side (nearest neighbour; a smaller image keeps its size). A JPEG's thumbnail is a JPEG,
// any other's a PNG.
func MakeThumbnail(r io.ReadSeeker) (mimeType string, b []byte, err error) {
	cfg, format, err := image.DecodeConfig(r)
	if err != nil {
		return "", nil, ErrNoThumbnail
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > MaxThumbnailPixels {
		return "", nil, ErrNoThumbnail
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return "", nil, err
	}
	img, _, err := image.Decode(r)
	if err != nil {
		return "", nil, ErrNoThumbnail
	}
	small := Scale(img, ThumbnailSize)
	var out bytes.Buffer
	if format == "jpeg" {
		err = jpeg.Encode(&out, small, &jpeg.Options{Quality: 85})
		return "image/jpeg", out.Bytes(), err
	}
	err = png.Encode(&out, small)
	return "image/png", out.Bytes(), err
}

// Scale returns img scaled down by nearest neighbour so that its longer side is at most size.
func Scale(img image.Image, size int) image.Image {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if w <= size && h <= size {
		return img
	}
	tw, th := size, max(1, h*size/w)
	if h > w {
		tw, th = max(1, w*size/h), size
	}
	dst := image.NewRGBA(image.Rect(0, 0, tw, th))
	for y := range th {
		sy := b.Min.Y + y*h/th
		for x := range tw {
			dst.Set(x, y, img.At(b.Min.X+x*w/tw, sy))
		}
	}
	return dst
}
