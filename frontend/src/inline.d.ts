// A stylesheet imported with "?inline" is its text (Vite's CSS pipeline, minified in a build).
declare module "*.css?inline" {
  const css: string;
  export default css;
}
