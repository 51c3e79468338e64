// The libcamera backend of scangate_camera.h. Built against the libcamera headers the build
// machine has (Debian 12's 0.0.3, Debian 13's 0.4, Raspberry Pi OS's own); without them (or with
// SCANGATE_LIBCAMERA=0 at build time) the same functions compile into a stub that says so.
// Every C++ exception is caught here: none may cross into Swift.
#include "scangate_camera.h"

#include <cstdio>
#include <cstring>

#if defined(SG_WITH_LIBCAMERA) && __has_include(<libcamera/libcamera.h>)
#define SG_HAVE_LIBCAMERA 1
#else
#define SG_HAVE_LIBCAMERA 0
#endif

namespace {
void put_error(char *error, size_t capacity, const char *text) {
  if (error == nullptr || capacity == 0) return;
  std::snprintf(error, capacity, "%s", text);
}
}  // namespace

#if SG_HAVE_LIBCAMERA

#include <libcamera/libcamera.h>
#include <libcamera/version.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

using namespace libcamera;

#define SG_STR2(x) #x
#define SG_STR(x) SG_STR2(x)

namespace {

constexpr unsigned kMaxBuffers = 8;
constexpr unsigned kRing = 16;  // a power of two above kMaxBuffers

uint64_t monotonic_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/// libcamera 0.0.x lets a camera be torn down off its thread once that thread has stopped;
/// later versions assert that every event notifier is torn down on its own thread.
constexpr bool kCanAbandon = LIBCAMERA_VERSION_MAJOR == 0 && LIBCAMERA_VERSION_MINOR == 0;

/// libcamera logs INFO lines to stderr by default; a door reader wants errors only, unless the
/// operator asked for more with LIBCAMERA_LOG_LEVELS.
void quiet_logging() { setenv("LIBCAMERA_LOG_LEVELS", "*:ERROR", 0); }

/// Formats ScanGate reads luma from in place, best first.
const char *const kPreferred[] = {"R8", "NV12", "YUV420", "NV21", "YVU420", "NV16", "NV61", "YUV422",
                                  "YUYV", "YVYU", "UYVY", "VYUY", "BGR888", "RGB888", "XRGB8888",
                                  "XBGR8888", "ARGB8888", "ABGR8888"};

std::shared_ptr<Camera> select_camera(CameraManager &cm, const char *wanted) {
  const auto cameras = cm.cameras();
  if (cameras.empty()) return nullptr;
  if (wanted == nullptr || wanted[0] == '\0') return cameras.front();
  bool digits = true;
  for (const char *p = wanted; *p; p++) digits = digits && *p >= '0' && *p <= '9';
  if (digits && std::strlen(wanted) < 4) {
    unsigned index = (unsigned)std::atoi(wanted);
    return index < cameras.size() ? cameras[index] : nullptr;
  }
  return cm.get(wanted);
}

std::string model_of(const Camera &camera) {
  const auto model = camera.properties().get(properties::Model);
  return model ? *model : std::string();
}

bool has_control(const Camera &camera, const ControlId &id) {
  return camera.controls().find(id.id()) != camera.controls().end();
}

}  // namespace

struct sg_cam {
  std::unique_ptr<CameraManager> manager;
  std::shared_ptr<Camera> camera;
  std::unique_ptr<CameraConfiguration> config;
  std::unique_ptr<FrameBufferAllocator> allocator;
  Stream *stream = nullptr;
  std::vector<std::unique_ptr<Request>> requests;
  sg_cam_plane planes[kMaxBuffers] = {};
  unsigned count = 0;
  int event_fd = -1;
  bool acquired = false;
  bool started = false;
  std::atomic<bool> stopping{false};
  std::atomic<bool> lost{false};
  std::atomic<bool> unplugged{false};  // libcamera saw the device go (udev)
  std::atomic<uint64_t> last_completion_ns{0};
  // Completed requests, by index: written on libcamera's thread, read on the loop's.
  std::atomic<uint32_t> head{0};
  std::atomic<uint32_t> tail{0};
  uint32_t ring[kRing] = {};
  int taken = -1;
  uint64_t failed = 0;

  void signal() {
    uint64_t one = 1;
    ssize_t n = write(event_fd, &one, sizeof one);
    (void)n;
  }

  void completed(Request *request) {
    if (stopping.load(std::memory_order_acquire)) return;
    last_completion_ns.store(monotonic_ns(), std::memory_order_release);
    if (request->status() == Request::RequestCancelled) lost.store(true, std::memory_order_release);
    uint32_t h = head.load(std::memory_order_relaxed);
    ring[h % kRing] = (uint32_t)request->cookie();
    head.store(h + 1, std::memory_order_release);
    signal();
  }

  void disconnected() {
    unplugged.store(true, std::memory_order_release);
    lost.store(true, std::memory_order_release);
    signal();
  }

  /// Queues request `index` again with its buffer. False when the camera refuses (lost).
  bool requeue(unsigned index) {
    Request *request = requests[index].get();
    request->reuse(Request::ReuseBuffers);
    if (camera->queueRequest(request) < 0) {
      lost.store(true, std::memory_order_release);
      return false;
    }
    return true;
  }

  /// Whether the camera stopped delivering: lost, or silent for a second.
  bool silent() const {
    return lost.load(std::memory_order_acquire) ||
           monotonic_ns() - last_completion_ns.load(std::memory_order_acquire) > 1000000000u;
  }

  // A camera whose device vanished must not be stopped: its requests are stuck in a device that
  // is gone, and Camera::stop() then trips libcamera's own assertion (PipelineHandler::stop:
  // queued requests left) and aborts the process. Unless libcamera saw the removal (udev; the
  // camera is then disconnected and stop() does nothing), a silent camera is abandoned instead:
  // libcamera's thread is stopped first (no completion can race the teardown), then everything
  // is freed on this thread. libcamera 0.1 and later forbid that teardown off its thread; there,
  // udev's removal gets up to 3 s to arrive before the stop.
  ~sg_cam() {
    const bool abandon = started && silent() && !unplugged.load(std::memory_order_acquire);
    if (abandon && !kCanAbandon) {
      for (int i = 0; i < 300 && !unplugged.load(std::memory_order_acquire); i++) usleep(10000);
    }
    stopping.store(true, std::memory_order_release);
    if (camera) {
      camera->requestCompleted.disconnect(this);
      camera->disconnected.disconnect(this);
    }
    if (abandon && kCanAbandon) {
      manager->stop();
      requests.clear();
      for (unsigned i = 0; i < count; i++) sg_cam_unmap_plane(&planes[i]);
      if (allocator && stream) allocator->free(stream);
      allocator.reset();
      config.reset();
      camera.reset();
      manager.reset();
      if (event_fd >= 0) close(event_fd);
      return;
    }
    if (started) camera->stop();
    requests.clear();
    for (unsigned i = 0; i < count; i++) sg_cam_unmap_plane(&planes[i]);
    if (allocator && stream) allocator->free(stream);
    allocator.reset();
    config.reset();
    if (acquired) camera->release();
    camera.reset();
    if (manager) manager->stop();
    manager.reset();
    if (event_fd >= 0) close(event_fd);
  }
};

namespace {

int configure(sg_cam &cam, const sg_cam_settings &s, sg_cam_info &info, char *error, size_t cap) {
  cam.config = cam.camera->generateConfiguration({StreamRole::VideoRecording});
  if (!cam.config || cam.config->size() != 1) {
    put_error(error, cap, "the camera has no video stream");
    return SG_CAM_FORMAT;
  }
  StreamConfiguration &stream = cam.config->at(0);
  const std::vector<PixelFormat> offered = stream.formats().pixelformats();
  PixelFormat chosen;
  for (const char *name : kPreferred) {
    for (const PixelFormat &format : offered)
      if (format.toString() == name) { chosen = format; break; }
    if (chosen.isValid()) break;
  }
  if (!chosen.isValid()) {
    std::string list;
    for (const PixelFormat &format : offered) list += (list.empty() ? "" : ", ") + format.toString();
    std::snprintf(error, cap, "the camera offers no format with a luma plane (it offers %s)", list.c_str());
    return SG_CAM_FORMAT;
  }
  stream.pixelFormat = chosen;
  stream.size = Size(s.width, s.height);
  stream.bufferCount = s.buffers;
  if (cam.config->validate() == CameraConfiguration::Invalid) {
    put_error(error, cap, "the camera rejected the stream configuration");
    return SG_CAM_FORMAT;
  }
  if (stream.size.width > s.width || stream.size.height > s.height) {
    std::snprintf(error, cap,
                  "the camera chose %ux%u, larger than the configured %ux%u; configure a size it offers "
                  "(scangate probe lists them)",
                  stream.size.width, stream.size.height, s.width, s.height);
    return SG_CAM_FORMAT;
  }
  const std::string format = stream.pixelFormat.toString();
  if (sg_cam_luma_layout(format.c_str(), &info.pixel_stride, &info.luma_offset) != SG_CAM_OK) {
    std::snprintf(error, cap, "the camera switched the stream to %s, which has no luma plane", format.c_str());
    return SG_CAM_FORMAT;
  }
  if (cam.camera->configure(cam.config.get()) < 0) {
    put_error(error, cap, "libcamera could not configure the camera");
    return SG_CAM_FAILED;
  }
  std::snprintf(info.pixel_format, sizeof info.pixel_format, "%s", format.c_str());
  info.width = stream.size.width;
  info.height = stream.size.height;
  info.row_stride = stream.stride;
  cam.stream = stream.stream();
  return SG_CAM_OK;
}

int allocate(sg_cam &cam, sg_cam_info &info, char *error, size_t cap) {
  cam.allocator = std::make_unique<FrameBufferAllocator>(cam.camera);
  if (cam.allocator->allocate(cam.stream) < 0) {
    put_error(error, cap, "libcamera could not allocate frame buffers");
    return SG_CAM_FAILED;
  }
  const auto &buffers = cam.allocator->buffers(cam.stream);
  if (buffers.size() < 2) {
    put_error(error, cap, "libcamera allocated fewer than 2 frame buffers");
    return SG_CAM_FAILED;
  }
  const unsigned n = buffers.size() < kMaxBuffers ? (unsigned)buffers.size() : kMaxBuffers;
  for (unsigned i = 0; i < n; i++) {
    FrameBuffer *buffer = buffers[i].get();
    const FrameBuffer::Plane &plane = buffer->planes()[0];
    if (sg_cam_map_plane(plane.fd.get(), plane.offset, plane.length, &cam.planes[i]) != SG_CAM_OK) {
      std::snprintf(error, cap, "cannot map frame buffer %u: %s", i, std::strerror(errno));
      return SG_CAM_FAILED;
    }
    cam.count = i + 1;
    std::unique_ptr<Request> request = cam.camera->createRequest(i);
    if (!request || request->addBuffer(cam.stream, buffer) < 0) {
      put_error(error, cap, "libcamera could not create a capture request");
      return SG_CAM_FAILED;
    }
    cam.requests.push_back(std::move(request));
  }
  if (info.row_stride == 0) info.row_stride = cam.planes[0].plane_length / info.height;
  const size_t span = (size_t)(info.height - 1) * info.row_stride + (size_t)(info.width - 1) * info.pixel_stride + 1;
  if (span + info.luma_offset > cam.planes[0].plane_length) {
    put_error(error, cap, "the luma plane is smaller than its geometry");
    return SG_CAM_FORMAT;
  }
  info.buffers = cam.count;
  return SG_CAM_OK;
}

/// The controls a door needs, each only when the camera has it.
ControlList door_controls(const Camera &camera, const sg_cam_settings &s, sg_cam_info &info) {
  ControlList controls(controls::controls);
  auto want = [&](uint32_t bit, const ControlId &id) {
    if (has_control(camera, id)) { info.controls_applied |= bit; return true; }
    info.controls_missing |= bit;
    return false;
  };
  const int64_t frame = s.fps > 0 ? 1000000 / s.fps : 33333;
  int64_t longest = frame;
  if (s.exposure_us > 0) {
    if (want(SG_CAM_CTRL_EXPOSURE, controls::ExposureTime)) {
      if (has_control(camera, controls::AeEnable)) controls.set(controls::AeEnable, false);
      controls.set(controls::ExposureTime, (int32_t)s.exposure_us);
    }
  } else if (s.exposure_max_us > frame) {
    longest = s.exposure_max_us;
  }
  if (want(SG_CAM_CTRL_FRAME_DURATION, controls::FrameDurationLimits)) {
    const int64_t limits[2] = {frame, longest};
    controls.set(controls::FrameDurationLimits, Span<const int64_t, 2>(limits));
  }
  if (s.af_mode == SG_CAM_AF_CONTINUOUS) {
    if (want(SG_CAM_CTRL_AF_MODE, controls::AfMode)) controls.set(controls::AfMode, (int32_t)controls::AfModeContinuous);
  } else if (s.af_mode == SG_CAM_AF_MANUAL) {
    if (want(SG_CAM_CTRL_AF_MODE, controls::AfMode)) controls.set(controls::AfMode, (int32_t)controls::AfModeManual);
    if (s.lens_dioptres >= 0 && want(SG_CAM_CTRL_LENS_POSITION, controls::LensPosition))
      controls.set(controls::LensPosition, s.lens_dioptres);
  }
  return controls;
}

int open_camera(sg_cam &cam, const sg_cam_settings &s, sg_cam_info &info, char *error, size_t cap) {
  quiet_logging();
  cam.event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (cam.event_fd < 0) {
    std::snprintf(error, cap, "eventfd: %s", std::strerror(errno));
    return SG_CAM_FAILED;
  }
  cam.manager = std::make_unique<CameraManager>();
  if (cam.manager->start() < 0) {
    cam.manager.reset();
    put_error(error, cap, "libcamera's camera manager did not start");
    return SG_CAM_FAILED;
  }
  cam.camera = select_camera(*cam.manager, s.camera);
  if (!cam.camera) {
    std::snprintf(error, cap, "no libcamera camera %s%s%s (scangate probe lists them)",
                  s.camera && *s.camera ? "\"" : "", s.camera && *s.camera ? s.camera : "at all",
                  s.camera && *s.camera ? "\"" : "");
    return SG_CAM_NOT_FOUND;
  }
  std::snprintf(info.id, sizeof info.id, "%s", cam.camera->id().c_str());
  std::snprintf(info.model, sizeof info.model, "%s", model_of(*cam.camera).c_str());
  const int acquired = cam.camera->acquire();
  if (acquired < 0) {
    std::snprintf(error, cap, "camera %s is in use: %s", info.id, std::strerror(-acquired));
    return acquired == -EBUSY ? SG_CAM_BUSY : SG_CAM_FAILED;
  }
  cam.acquired = true;
  if (int rc = configure(cam, s, info, error, cap); rc != SG_CAM_OK) return rc;
  if (int rc = allocate(cam, info, error, cap); rc != SG_CAM_OK) return rc;
  cam.camera->requestCompleted.connect(&cam, &sg_cam::completed);
  cam.camera->disconnected.connect(&cam, &sg_cam::disconnected);
  ControlList controls = door_controls(*cam.camera, s, info);
  if (cam.camera->start(&controls) < 0) {
    put_error(error, cap, "libcamera could not start the camera");
    return SG_CAM_FAILED;
  }
  cam.started = true;
  cam.last_completion_ns.store(monotonic_ns());
  for (auto &request : cam.requests) {
    if (cam.camera->queueRequest(request.get()) < 0) {
      put_error(error, cap, "libcamera refused a capture request");
      return SG_CAM_FAILED;
    }
  }
  return SG_CAM_OK;
}

void describe_stream(std::string &out, const char *role, const StreamConfiguration &stream) {
  const StreamFormats &formats = stream.formats();
  for (const PixelFormat &format : formats.pixelformats()) {
    out += "    ";
    out += role;
    out += " " + format.toString() + ":";
    const std::vector<Size> sizes = formats.sizes(format);
    if (sizes.empty() || sizes.size() > 12) {
      out += " " + formats.range(format).toString();
    } else {
      for (const Size &size : sizes) out += " " + size.toString();
    }
    uint32_t stride = 0, offset = 0;
    if (sg_cam_luma_layout(format.toString().c_str(), &stride, &offset) != SG_CAM_OK) out += " (no luma plane)";
    out += "\n";
  }
}

int list_cameras(char *out, size_t capacity) {
  quiet_logging();
  CameraManager manager;
  if (manager.start() < 0) {
    put_error(out, capacity, "libcamera's camera manager did not start");
    return SG_CAM_FAILED;
  }
  std::string text;
  int n = 0;
  {  // every camera reference is dropped before the manager stops
  const auto cameras = manager.cameras();
  n = (int)cameras.size();
  for (size_t i = 0; i < cameras.size(); i++) {
    const std::shared_ptr<Camera> &camera = cameras[i];
    text += "  " + std::to_string(i) + ": " + camera->id();
    const std::string model = model_of(*camera);
    if (!model.empty()) text += " (" + model + ")";
    text += "\n";
    if (auto video = camera->generateConfiguration({StreamRole::VideoRecording}); video && video->size() > 0)
      describe_stream(text, "stream", video->at(0));
    if (auto raw = camera->generateConfiguration({StreamRole::Raw}); raw && raw->size() > 0)
      describe_stream(text, "sensor", raw->at(0));
    std::string controls;
    if (has_control(*camera, controls::ExposureTime)) controls += " exposure";
    if (has_control(*camera, controls::FrameDurationLimits)) controls += " frame-duration";
    if (has_control(*camera, controls::AfMode)) controls += " autofocus";
    if (has_control(*camera, controls::LensPosition)) controls += " lens-position";
    text += "    controls:" + (controls.empty() ? std::string(" none of the door's") : controls) + "\n";
  }
  }
  manager.stop();
  put_error(out, capacity, text.c_str());
  return n;
}

}  // namespace

extern "C" {

int sg_cam_built(void) { return 1; }

const char *sg_cam_library_version(void) {
  return SG_STR(LIBCAMERA_VERSION_MAJOR) "." SG_STR(LIBCAMERA_VERSION_MINOR) "." SG_STR(LIBCAMERA_VERSION_PATCH);
}

int sg_cam_open(const sg_cam_settings *settings, sg_cam **out, sg_cam_info *info, char *error, size_t cap) {
  if (settings == nullptr || out == nullptr || info == nullptr) return SG_CAM_FAILED;
  *out = nullptr;
  std::memset(info, 0, sizeof *info);
  put_error(error, cap, "");
  if (settings->buffers < 2 || settings->buffers > kMaxBuffers || settings->width == 0 || settings->height == 0) {
    put_error(error, cap, "bad camera settings");
    return SG_CAM_FAILED;
  }
  sg_cam *cam = nullptr;
  try {
    cam = new sg_cam();
    const int rc = open_camera(*cam, *settings, *info, error, cap);
    if (rc != SG_CAM_OK) {
      delete cam;
      return rc;
    }
    *out = cam;
    return SG_CAM_OK;
  } catch (const std::exception &e) {
    std::snprintf(error, cap, "libcamera: %s", e.what());
  } catch (...) {
    put_error(error, cap, "libcamera: unexpected exception");
  }
  try { delete cam; } catch (...) {}
  return SG_CAM_FAILED;
}

int sg_cam_event_fd(const sg_cam *cam) { return cam ? cam->event_fd : -1; }

int sg_cam_take(sg_cam *cam, const uint8_t **plane, size_t *length, uint64_t *timestamp_ns, uint64_t *sequence,
                uint64_t *dropped) {
  if (cam == nullptr) return SG_CAM_LOST;
  try {
    uint64_t signals = 0;
    ssize_t n = read(cam->event_fd, &signals, sizeof signals);
    (void)n;
    if (cam->taken >= 0) return 1;  // not given back yet: still the caller's
    int newest = -1;
    const uint32_t head = cam->head.load(std::memory_order_acquire);
    for (uint32_t t = cam->tail.load(std::memory_order_relaxed); t != head; t++) {
      const unsigned index = cam->ring[t % kRing];
      cam->tail.store(t + 1, std::memory_order_release);
      if (index >= cam->count) continue;
      const Request *request = cam->requests[index].get();
      const FrameBuffer *buffer = request->findBuffer(cam->stream);
      const bool good = request->status() == Request::RequestComplete && buffer != nullptr &&
                        buffer->metadata().status == FrameMetadata::FrameSuccess;
      if (!good) {
        cam->failed++;
        if (!cam->lost.load(std::memory_order_acquire) && !cam->requeue(index)) return SG_CAM_LOST;
        continue;
      }
      if (newest >= 0) {
        (*dropped)++;
        if (!cam->requeue((unsigned)newest)) return SG_CAM_LOST;
      }
      newest = (int)index;
    }
    if (cam->lost.load(std::memory_order_acquire)) {
      if (newest >= 0) cam->requeue((unsigned)newest);
      return SG_CAM_LOST;
    }
    if (newest < 0) return 0;
    const FrameBuffer *buffer = cam->requests[newest]->findBuffer(cam->stream);
    *plane = cam->planes[newest].plane;
    *length = cam->planes[newest].plane_length;
    *timestamp_ns = buffer->metadata().timestamp;
    *sequence = buffer->metadata().sequence;
    cam->taken = newest;
    return 1;
  } catch (...) {
    cam->lost.store(true);
    return SG_CAM_LOST;
  }
}

int sg_cam_return(sg_cam *cam) {
  if (cam == nullptr) return SG_CAM_LOST;
  try {
    if (cam->taken < 0) return SG_CAM_OK;
    const unsigned index = (unsigned)cam->taken;
    cam->taken = -1;
    return cam->requeue(index) ? SG_CAM_OK : SG_CAM_LOST;
  } catch (...) {
    cam->lost.store(true);
    return SG_CAM_LOST;
  }
}

uint64_t sg_cam_failed_frames(const sg_cam *cam) { return cam ? cam->failed : 0; }

void sg_cam_close(sg_cam *cam) {
  try { delete cam; } catch (...) {}
}

int sg_cam_list(char *out, size_t capacity) {
  try {
    return list_cameras(out, capacity);
  } catch (const std::exception &e) {
    if (out && capacity) std::snprintf(out, capacity, "libcamera: %s", e.what());
  } catch (...) {
    put_error(out, capacity, "libcamera: unexpected exception");
  }
  return SG_CAM_FAILED;
}

}  // extern "C"

#else  // no libcamera in this build

namespace {
const char kNotBuilt[] =
    "this scangate was built without libcamera (install libcamera-dev and rebuild; "
    "camera.source = \"v4l2\" works without it)";
}

struct sg_cam {};

extern "C" {
int sg_cam_built(void) { return 0; }
const char *sg_cam_library_version(void) { return ""; }
int sg_cam_open(const sg_cam_settings *, sg_cam **out, sg_cam_info *info, char *error, size_t cap) {
  if (out) *out = nullptr;
  if (info) std::memset(info, 0, sizeof *info);
  put_error(error, cap, kNotBuilt);
  return SG_CAM_NOT_BUILT;
}
int sg_cam_event_fd(const sg_cam *) { return -1; }
int sg_cam_take(sg_cam *, const uint8_t **, size_t *, uint64_t *, uint64_t *, uint64_t *) { return SG_CAM_LOST; }
int sg_cam_return(sg_cam *) { return SG_CAM_LOST; }
uint64_t sg_cam_failed_frames(const sg_cam *) { return 0; }
void sg_cam_close(sg_cam *) {}
int sg_cam_list(char *out, size_t capacity) {
  put_error(out, capacity, kNotBuilt);
  return SG_CAM_NOT_BUILT;
}
}

#endif
