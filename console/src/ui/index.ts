export { Badge, ChoiceFilter, ConfirmButton, duration, Facts, JsonBlock, Loading, Meter, Notice, Section, when } from './controls';
export { DataTable, loadedList, usePagedList } from './data-table';
export type { Column, ListSource, PagedList } from './data-table';
export { DiffView } from './diff-view';
export { ErrorBanner } from './errors';
export { asApiError, useAction, useLoad, useNow } from './hooks';
export { useLive } from './live';
export type { Loaded } from './hooks';
export { BreakableId, CopyButton, ShortId, shortId } from './short-id';
