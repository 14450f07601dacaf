"""Voice glue: speech identity, playback, subtitles, Piper on demand, pipelines, our satellite."""
