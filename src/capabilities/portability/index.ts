/** The portability capability as other capabilities see it: its module and its service. */
export { PortabilityModule } from './portability.module';
export { PortabilityService } from './portability.service';
