#pragma once
#include <libavformat/avformat.h>
#include <libswscale/swscale.h>
