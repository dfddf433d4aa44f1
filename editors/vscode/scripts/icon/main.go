//go:build ignore

// Draws the extension's icon: media/icon.svg and media/icon.png (256×256,
// what the Marketplace shows) from one list of shapes, so the two never
// differ. Run from editors/vscode: go run scripts/icon/main.go
//
// The picture: a familiar (the witch's cat) looking out of a dark tile, with a
// branch forking below it: the agent that works beside you on a branch of
// its own.
package main

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"log"
	"math"
	"os"
)

type rgb struct{ r, g, b float64 }

func hex(s string) rgb {
	var r, g, b int
	fmt.Sscanf(s, "#%02x%02x%02x", &r, &g, &b)
	return rgb{float64(r), float64(g), float64(b)}
}

func (c rgb) String() string { return fmt.Sprintf("#%02X%02X%02X", int(c.r), int(c.g), int(c.b)) }

// shape is one filled figure in the 128×128 view box.
type shape interface {
	inside(x, y float64) bool
	svg() string
}

type roundRect struct {
	x, y, w, h, r float64
	fill          rgb
}

func (s roundRect) inside(x, y float64) bool {
	if x < s.x || y < s.y || x > s.x+s.w || y > s.y+s.h {
		return false
	}
	cx := math.Max(s.x+s.r, math.Min(x, s.x+s.w-s.r))
	cy := math.Max(s.y+s.r, math.Min(y, s.y+s.h-s.r))
	return (x-cx)*(x-cx)+(y-cy)*(y-cy) <= s.r*s.r
}

func (s roundRect) svg() string {
	return fmt.Sprintf(`<rect x="%g" y="%g" width="%g" height="%g" rx="%g" fill="%s"/>`, s.x, s.y, s.w, s.h, s.r, s.fill)
}

type ellipse struct {
	cx, cy, rx, ry float64
	fill           rgb
}

func (s ellipse) inside(x, y float64) bool {
	dx, dy := (x-s.cx)/s.rx, (y-s.cy)/s.ry
	return dx*dx+dy*dy <= 1
}

func (s ellipse) svg() string {
	if s.rx == s.ry {
		return fmt.Sprintf(`<circle cx="%g" cy="%g" r="%g" fill="%s"/>`, s.cx, s.cy, s.rx, s.fill)
	}
	return fmt.Sprintf(`<ellipse cx="%g" cy="%g" rx="%g" ry="%g" fill="%s"/>`, s.cx, s.cy, s.rx, s.ry, s.fill)
}

type polygon struct {
	pts  [][2]float64
	fill rgb
}

func (s polygon) inside(x, y float64) bool {
	in := false
	for i, j := 0, len(s.pts)-1; i < len(s.pts); j, i = i, i+1 {
		a, b := s.pts[i], s.pts[j]
		if (a[1] > y) != (b[1] > y) && x < (b[0]-a[0])*(y-a[1])/(b[1]-a[1])+a[0] {
			in = !in
		}
	}
	return in
}

func (s polygon) svg() string {
	var b bytes.Buffer
	for i, p := range s.pts {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%g,%g", p[0], p[1])
	}
	return fmt.Sprintf(`<polygon points="%s" fill="%s"/>`, b.String(), s.fill)
}

// line is a stroke with round caps from a to b.
type line struct {
	ax, ay, bx, by, width float64
	stroke                rgb
}

func (s line) inside(x, y float64) bool {
	dx, dy := s.bx-s.ax, s.by-s.ay
	t := math.Max(0, math.Min(1, ((x-s.ax)*dx+(y-s.ay)*dy)/(dx*dx+dy*dy)))
	px, py := s.ax+t*dx-x, s.ay+t*dy-y
	return px*px+py*py <= s.width*s.width/4
}

func (s line) svg() string {
	return fmt.Sprintf(`<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="%g" stroke-linecap="round"/>`,
		s.ax, s.ay, s.bx, s.by, s.stroke, s.width)
}

var (
	tile   = hex("#2B1E55")
	fur    = hex("#F4EFFF")
	eye    = hex("#FFC14D")
	pupil  = hex("#2B1E55")
	nose   = hex("#E58FB0")
	branch = hex("#8FD3A6")
)

var shapes = []shape{
	roundRect{0, 0, 128, 128, 26, tile},
	// The branch: it leaves the trunk, runs beside it and joins again.
	line{64, 128, 64, 98, 7, branch},
	line{64, 124, 90, 108, 7, branch},
	// Ears, then the head over their bases.
	polygon{[][2]float64{{28, 58}, {32, 14}, {62, 40}}, fur},
	polygon{[][2]float64{{100, 58}, {96, 14}, {66, 40}}, fur},
	ellipse{64, 64, 38, 34, fur},
	// Inner ears.
	polygon{[][2]float64{{36, 44}, {38, 25}, {51, 37}}, nose},
	polygon{[][2]float64{{92, 44}, {90, 25}, {77, 37}}, nose},
	// Eyes: two commits, with a cat's slit pupils.
	ellipse{48, 62, 9, 9, eye},
	ellipse{80, 62, 9, 9, eye},
	ellipse{48, 62, 2.6, 7, pupil},
	ellipse{80, 62, 2.6, 7, pupil},
	polygon{[][2]float64{{59, 76}, {69, 76}, {64, 82}}, nose},
	// The head's commits on the branch below it.
	ellipse{64, 104, 6.5, 6.5, branch},
	ellipse{90, 108, 6.5, 6.5, branch},
}

func main() {
	var svg bytes.Buffer
	svg.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" width="128" height="128" viewBox="0 0 128 128">` + "\n")
	for _, s := range shapes {
		svg.WriteString("  " + s.svg() + "\n")
	}
	svg.WriteString("</svg>\n")
	if err := os.WriteFile("media/icon.svg", svg.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}

	const size, samples = 256, 4 // 4×4 samples a pixel: edges anti-aliased
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	scale := 128.0 / size
	for py := 0; py < size; py++ {
		for px := 0; px < size; px++ {
			var r, g, b, a float64
			for sy := 0; sy < samples; sy++ {
				for sx := 0; sx < samples; sx++ {
					x := (float64(px) + (float64(sx)+0.5)/samples) * scale
					y := (float64(py) + (float64(sy)+0.5)/samples) * scale
					for i := len(shapes) - 1; i >= 0; i-- {
						if shapes[i].inside(x, y) {
							c := fill(shapes[i])
							r, g, b, a = r+c.r, g+c.g, b+c.b, a+1
							break
						}
					}
				}
			}
			if a == 0 {
				continue
			}
			n := float64(samples * samples)
			img.SetNRGBA(px, py, color.NRGBA{uint8(r/a + 0.5), uint8(g/a + 0.5), uint8(b/a + 0.5), uint8(255*a/n + 0.5)})
		}
	}
	var out bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&out, img); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("media/icon.png", out.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
}

func fill(s shape) rgb {
	switch s := s.(type) {
	case roundRect:
		return s.fill
	case ellipse:
		return s.fill
	case polygon:
		return s.fill
	case line:
		return s.stroke
	}
	return rgb{}
}
